-- strings: concatenation, string.format, gsub, find, sub and byte.
-- The argument "small" shrinks the work for quick correctness tests.
local small = (...) == "small"

local checksum = 0
for i = 1, small and 600 or 60000 do
  local s = "item-" .. i .. ":" .. string.format("%05d|%s", i % 99991, "value")
  local replaced, count = string.gsub(s, "%d", "x")
  local a, b = string.find(s, ":(%d+)|")
  local upper = string.upper(string.sub(s, 1, 4))
  checksum = (checksum + #replaced + count + a + b + string.byte(upper, 2)) % 1000000007
  if string.find(s, "77", 1, true) then
    checksum = checksum + 1
  end
end
return checksum
