local function helper(x)
  return x * 2
end
return helper(21)
