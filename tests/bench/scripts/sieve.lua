-- sieve: the sieve of Eratosthenes over a boolean array.
-- The argument "small" shrinks the work for quick correctness tests.
local small = (...) == "small"

local function sieve(n)
  local composite = {}
  for i = 1, n do
    composite[i] = false
  end
  local count = 0
  for i = 2, n do
    if not composite[i] then
      count = count + 1
      for j = i * i, n, i do
        composite[j] = true
      end
    end
  end
  return count
end

local checksum = 0
for round = 1, 4 do
  checksum = checksum + sieve((small and 2500 or 250000) + round)
end
return checksum
