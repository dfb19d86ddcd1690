-- concat: building strings with string.rep and table.concat.
-- The argument "small" shrinks the work for quick correctness tests.
local small = (...) == "small"

local checksum = 0
for round = 1, small and 2 or 25 do
  local parts = {}
  for i = 1, small and 1000 or 10000 do
    parts[#parts + 1] = string.rep("ab", i % 8) .. tostring(i)
  end
  local s = table.concat(parts, ",")
  local line = string.rep("-", round) .. s
  checksum = (checksum + #s + #line + string.byte(s, #s - round)) % 1000000007
end
return checksum
