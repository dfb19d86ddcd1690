package testspecs

// GitHubScript is a 20-line script against GitHub's API (as the sdk
// "gh") that runs: optional fields checked with if and and, pcall's error
// value read, the sdk's second value unused. A type checker must find
// nothing in it.
const GitHubScript = `local issues = sdk.gh.issues_list_for_repo({owner = "o", repo = "r", state = "open", per_page = 50})
local titles = {}
for _, issue in issues do
	local body = issue.body
	if body and #body > 0 then
		table.insert(titles, issue.title .. ": " .. string.sub(body, 1, 40))
	end
	local reason = issue.state_reason and issue.state_reason or "none"
	table.insert(titles, reason)
end
local ok, err = pcall(function()
	return sdk.gh.issues_create({owner = "o", repo = "r"}, {title = "found " .. #titles, labels = {"triage"}})
end)
if not ok then
	print("could not create: " .. tostring(err))
end
progress(1, 1, "done")
local repo = sdk.gh.repos_get({owner = "o", repo = "r"})
print(repo.full_name, repo.stargazers_count)
return json.encode({titles = titles, created = ok})
`
