-- pcall: protected calls that succeed, and some that catch an error.
-- The argument "small" shrinks the work for quick correctness tests.
local small = (...) == "small"

local function work(i)
  if i % 40 == 0 then
    error("failed at " .. i)
  end
  return i * 2
end

local function errtable(i)
  error({code = i % 5})
end

local checksum = 0
for i = 1, small and 2000 or 200000 do
  local ok, v = pcall(work, i)
  if ok then
    checksum = checksum + v
  else
    -- the message starts with the chunk's name, which differs between
    -- engines: only the part after it counts
    checksum = checksum + tonumber(string.match(v, "failed at (%d+)$"))
  end
  if i % 100 == 0 then
    local ok2, e = pcall(errtable, i)
    if not ok2 then
      checksum = checksum + e.code
    end
  end
end
return checksum % 1000000007
