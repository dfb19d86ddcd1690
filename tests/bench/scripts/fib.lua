-- fib: recursive function calls (the classic call-overhead benchmark).
-- The argument "small" shrinks the work for quick correctness tests.
local small = (...) == "small"

local function fib(n)
  if n < 2 then
    return n
  end
  return fib(n - 1) + fib(n - 2)
end

return fib(small and 15 or 30)
