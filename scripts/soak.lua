-- wrk script of scripts/soak: a mixed read/write workload of the whole API. Each wrk thread is
-- one user (token from LOCIFY_TOKENS, comma-separated); its connections list categories and
-- locations (with and without q), read, create, update and delete locations, push small batches
-- and pull the change feed. A location id is owned by at most one request at a time (taken from
-- the thread's pool, put back by its 200/201 response), so no request races a delete and every
-- answer should be 2xx. LOCIFY_DELAY_MS (default 0) paces each connection.

local tokens = {}
for t in string.gmatch(os.getenv("LOCIFY_TOKENS") or "", "[^,]+") do table.insert(tokens, t) end
local pacing = tonumber(os.getenv("LOCIFY_DELAY_MS") or "0")
local threads = {}
local counter = 0

-- The default category every user has (openapi.yaml), where locations are written.
local cafe = "a1050188-e456-5998-8293-a282220c9930"

function setup(thread)
    counter = counter + 1
    thread:set("token", tokens[(counter - 1) % #tokens + 1])
    thread:set("seed", counter)
    table.insert(threads, thread)
end

local function uuid()
    return string.format("%08x-%04x-4%03x-%04x-%012x", math.random(0, 0xffffffff), math.random(0, 0xffff),
        math.random(0, 0xfff), 0x8000 + math.random(0, 0x3fff), math.random(0, 0xffffffffffff))
end

local function location(id, name)
    return string.format(
        '{"id":"%s","category_id":"%s","name":"%s","latitude":%.5f,"longitude":%.5f,"address":"%d Soak Street",' ..
        '"description":"soak test","is_favorite":%s,"image_urls":["https://img.example.com/%s.jpg"]}',
        id, cafe, name, math.random() * 180 - 90, math.random() * 360 - 180, math.random(1, 999),
        math.random() < 0.3 and "true" or "false", id)
end

function init(args)
    math.randomseed(os.time() * 100 + seed)
    statuses = {}
    kinds = {}
    pool = {}
    cursor = nil
    headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }
end

function delay()
    return pacing > 0 and math.random(0, 2 * pacing) or 0
end

local function take()
    local n = #pool
    if n == 0 then return nil end
    local index = math.random(n)
    local id = pool[index]
    pool[index] = pool[n]
    pool[n] = nil
    return id
end

local function count(kind)
    kinds[kind] = (kinds[kind] or 0) + 1
end

function request()
    local roll = math.random(100)
    if roll <= 12 or #pool < 10 then
        if #pool < 300 then
            count("create")
            return wrk.format("POST", "/v1/locations", headers, location(uuid(), "Soak place"))
        end
        roll = 90
    end
    if roll <= 24 then
        count("list categories")
        return wrk.format("GET", "/v1/categories?size=50", headers)
    elseif roll <= 40 then
        count("list locations")
        local queries = { "?size=20", "?size=20&sort=name", "?size=10&sort=updated_at&page=2", "?size=20&q=soak",
            "?size=20&is_favorite=true", "?size=20&category_id=" .. cafe }
        return wrk.format("GET", "/v1/locations" .. queries[math.random(#queries)], headers)
    elseif roll <= 52 then
        local id = take()
        if id then
            count("get")
            return wrk.format("GET", "/v1/locations/" .. id, headers)
        end
    elseif roll <= 66 then
        local id = take()
        if id then
            count("update")
            return wrk.format("PUT", "/v1/locations/" .. id, headers, location(id, "Soak place updated"))
        end
    elseif roll <= 78 then
        local id = take()
        if id then
            count("delete")
            return wrk.format("DELETE", "/v1/locations/" .. id, headers)
        end
    elseif roll <= 88 then
        count("push")
        local id = uuid()
        local body = '{"changes":[{"type":"location","action":"create","data":' .. location(id, "Pushed") ..
            '},{"type":"location","action":"delete","data":{"id":"' .. id .. '"}},' ..
            '{"type":"category","action":"update","data":{"id":"' .. cafe .. '","name":"Cafe"}}]}'
        return wrk.format("POST", "/v1/sync/push", headers, body)
    else
        count("pull")
        local query = "?limit=100"
        if cursor and math.random() < 0.8 then query = query .. "&since=" .. cursor end
        return wrk.format("GET", "/v1/sync/changes" .. query, headers)
    end
    count("list categories")
    return wrk.format("GET", "/v1/categories", headers)
end

function response(status, response_headers, body)
    statuses[status] = (statuses[status] or 0) + 1
    if status == 200 or status == 201 then
        local id = string.match(body, '^{"id":"([0-9a-f%-]+)","user_id":"[^"]*","category_id"')
        if id then
            table.insert(pool, id)
            return
        end
        local next_cursor = string.match(body, '"cursor":"([^"]+)"')
        if next_cursor then cursor = next_cursor end
    end
end

function done(summary, latency, requests)
    local total_statuses, total_kinds = {}, {}
    for _, thread in ipairs(threads) do
        for status, n in pairs(thread:get("statuses")) do total_statuses[status] = (total_statuses[status] or 0) + n end
        for kind, n in pairs(thread:get("kinds")) do total_kinds[kind] = (total_kinds[kind] or 0) + n end
    end
    local parts = {}
    for status, n in pairs(total_statuses) do table.insert(parts, string.format("%d=%d", status, n)) end
    table.sort(parts)
    io.write("statuses: " .. table.concat(parts, " ") .. "\n")
    parts = {}
    for kind, n in pairs(total_kinds) do table.insert(parts, string.format("%s=%d", kind, n)) end
    table.sort(parts)
    io.write("requests by kind: " .. table.concat(parts, ", ") .. "\n")
end
