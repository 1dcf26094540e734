-- POSTs one signal per request, each to the next deployment of a list, so every request is the
-- first signal of an IN_PROGRESS deployment. Args: <ids file> <body file>.
-- ids file: first line = agent tokens separated by spaces; then one "<deployment id> <token #>"
-- per line (token # is 1-based). Threads take the list in stride (thread t takes t+1, t+1+n, ...).
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "common.lua")

local ids = {}
local headers = {}
local body
used = 0
exhausted = 0
local nthreads = 1

local function read_all(path)
   local f = assert(io.open(path, "rb"))
   local s = f:read("*a")
   f:close()
   return s
end

function init(args)
   local text = read_all(args[1])
   body = read_all(args[2])
   nthreads = tonumber(args[3] or "1")
   local first = true
   for line in text:gmatch("[^\n]+") do
      if first then
         for token in line:gmatch("%S+") do
            headers[#headers + 1] = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
         end
         first = false
      else
         local id, t = line:match("^(%S+) (%d+)$")
         ids[#ids + 1] = { "/v1/guest/deployments/" .. id .. "/signal", tonumber(t) }
      end
   end
end

function request()
   local i = (tid or 0) + used * nthreads + 1
   used = used + 1
   local e = ids[i]
   if e == nil then
      -- Out of fresh deployments: reuse one (hearth answers 200 duplicate or 409; both are counted).
      exhausted = exhausted + 1
      e = ids[(i - 1) % #ids + 1]
   end
   return wrk.format("POST", e[1], headers[e[2]], body)
end
