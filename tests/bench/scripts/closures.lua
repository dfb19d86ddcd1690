-- closures: creating many closures with upvalues and calling them.
-- The argument "small" shrinks the work for quick correctness tests.
local small = (...) == "small"

local function counter(start, step)
  local n = start
  return function()
    n = n + step
    return n
  end
end

local function compose(f, g)
  return function(x)
    return f(g(x))
  end
end

local checksum = 0
for i = 1, small and 2000 or 200000 do
  local c = counter(i, 3)
  c()
  local h = compose(function(x) return x * 2 end, function(x) return x + c() end)
  checksum = (checksum + h(i) + c()) % 1000000007
end
return checksum
