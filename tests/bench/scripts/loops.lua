-- loops: nested numeric for loops with integer and float arithmetic.
-- The argument "small" shrinks the work for quick correctness tests.
local small = (...) == "small"

local sum = 0
local acc = 0.5
for i = 1, small and 30 or 3000 do
  for j = 1, 1000 do
    sum = (sum + (i * j) % 7 + (i + j) % 3) % 1000000007
    acc = acc * 0.999 + j / i
  end
end
return sum + math.floor(acc)
