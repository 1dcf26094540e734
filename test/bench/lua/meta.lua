-- GET with the headers given by -H (Authorization, If-None-Match); counts statuses.
dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "common.lua")
