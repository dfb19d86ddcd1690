-- tables: array inserts and reads, hash fields, and table.sort with a comparator.
-- The argument "small" shrinks the work for quick correctness tests.
local small = (...) == "small"

local checksum = 0
for round = 1, small and 1 or 8 do
  local t = {}
  local seed = round
  for i = 1, small and 200 or 20000 do
    seed = (seed * 16807) % 2147483647 -- Park-Miller: exact in doubles
    table.insert(t, seed % 100000)
  end
  table.sort(t, function(a, b) return a > b end)
  local h = {}
  for i = 1, #t do
    local k = "k" .. (t[i] % 500)
    h[k] = (h[k] or 0) + 1
  end
  for i = 1, #t, 7 do
    checksum = (checksum + t[i] * i) % 1000000007
  end
  checksum = (checksum + (h.k1 or 0) + (h.k250 or 0) + #t) % 1000000007
end
return checksum
