-- methods: objects with metatables, inheritance through __index, ':' calls.
-- The argument "small" shrinks the work for quick correctness tests.
local small = (...) == "small"

local Point = {}
Point.__index = Point

function Point.new(x, y)
  return setmetatable({x = x, y = y}, Point)
end

function Point:add(other)
  return Point.new(self.x + other.x, self.y + other.y)
end

function Point:dot(other)
  return self.x * other.x + self.y * other.y
end

local Point3 = setmetatable({}, {__index = Point})
Point3.__index = Point3

function Point3.new(x, y, z)
  local p = setmetatable({x = x, y = y}, Point3)
  p.z = z
  return p
end

function Point3:dot(other)
  return Point.dot(self, other) + self.z * (other.z or 0)
end

local checksum = 0
local acc = Point.new(0, 0)
for i = 1, small and 1200 or 120000 do
  local p = Point.new(i % 100, i % 37)
  local q = Point3.new(i % 11, i % 13, i % 17)
  acc = acc:add(p)
  checksum = (checksum + q:dot(q) + p:dot(q) + q:add(p):dot(p)) % 1000000007
end
return (checksum + acc.x + acc.y) % 1000000007
