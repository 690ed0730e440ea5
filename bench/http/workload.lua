-- bench/http/workload.lua: the one wrk script behind every workload of bench/http/run.
--
--   wrk ... -s bench/http/workload.lua URL -- WORKLOAD USERS_FILE NONCE
--
-- WORKLOAD is health, list, list_cat, categories, create, push (a sync push of one location
-- create: the same body as create, inside {"changes":[{"type","action","data"}]}) or update (a
-- PUT of a whole location, without updated_at, so that it always wins: each thread first creates
-- UPDATED_PER_THREAD locations, as create does, then replaces them in turn, renamed; the creates
-- are 200 of the run's requests per thread, and every PUT names a location whose create has
-- answered, since a thread has fewer connections than that). USERS_FILE has one line per user:
-- "<uid>\t<ID token>\t<category id>,<category id>,...". Requests rotate over the users (and, for
-- list_cat and create, over each user's categories), so every server sees the same request stream.
-- NONCE is 15 hex digits, new for every wrk run: with the wrk thread number and a per-thread
-- counter it makes the id of every created location unique across threads, runs and rounds.
-- When wrk is done, one line "BENCH_RESULT {json}" reports requests, duration, errors and the
-- latency percentiles (microseconds) for bench/http/harness.py to read.

local next_thread_number = 0

-- Runs in wrk's main Lua state, once per thread before it starts: gives each thread its number.
function setup(thread)
    next_thread_number = next_thread_number + 1
    thread:set("thread_number", next_thread_number)
end

local workload
local nonce
local users = {}
local prepared = {}
local cursor = 0
local counter = 0

local function split(text, separator)
    local parts = {}
    for part in string.gmatch(text, "([^" .. separator .. "]+)") do
        parts[#parts + 1] = part
    end
    return parts
end

local function read_users(path)
    local file = assert(io.open(path, "r"))
    for line in file:lines() do
        local fields = split(line, "\t")
        if #fields >= 2 then
            users[#users + 1] = {
                uid = fields[1],
                authorization = "Bearer " .. fields[2],
                categories = fields[3] and split(fields[3], ",") or {},
            }
        end
    end
    file:close()
    assert(#users > 0, "no users in " .. path)
end

local function get(path, user)
    local headers = { ["Accept"] = "application/json" }
    if user then
        headers["Authorization"] = user.authorization
    end
    return wrk.format("GET", path, headers)
end

-- Runs in each thread's own Lua state.
function init(args)
    workload = args[1]
    read_users(args[2])
    nonce = args[3] or "000000000000000"
    assert(#nonce == 15, "NONCE must be 15 hex digits")
    local thread = thread_number or 1
    if workload == "health" then
        prepared[1] = get("/health", nil)
    elseif workload == "list" then
        for _, user in ipairs(users) do
            prepared[#prepared + 1] = get("/v1/locations?page=1&size=20", user)
        end
    elseif workload == "list_cat" then
        -- Users vary fastest, so consecutive requests go to different users.
        local most = 0
        for _, user in ipairs(users) do
            most = math.max(most, #user.categories)
        end
        for index = 1, most do
            for _, user in ipairs(users) do
                local category = user.categories[(index - 1) % #user.categories + 1]
                prepared[#prepared + 1] = get("/v1/locations?page=10&size=20&category_id=" .. category, user)
            end
        end
    elseif workload == "categories" then
        for _, user in ipairs(users) do
            prepared[#prepared + 1] = get("/v1/categories", user)
        end
    elseif workload == "create" or workload == "push" or workload == "update" then
        for _, user in ipairs(users) do
            assert(#user.categories > 0, "user " .. user.uid .. " has no categories")
        end
    else
        error("unknown workload " .. tostring(workload))
    end
    -- Threads start at different points of the rotation.
    cursor = (thread - 1) * 7
end

-- The next new location (body text) and the user who writes it.
local function next_location()
    counter = counter + 1
    local user = users[(counter + cursor) % #users + 1]
    local category = user.categories[math.floor(counter / #users) % #user.categories + 1]
    -- Version 4 layout: nonce (15 hex digits), thread number (3), counter (12).
    local id = string.format("%s-%s-4%s-8%03x-%012x",
        string.sub(nonce, 1, 8), string.sub(nonce, 9, 12), string.sub(nonce, 13, 15),
        (thread_number or 1) % 4096, counter)
    local body = string.format(
        '{"id":"%s","category_id":"%s","name":"Bench place %d","address":"%d Benchmark Road",'
            .. '"latitude":%.6f,"longitude":%.6f,"is_favorite":%s}',
        id, category, counter, counter % 1000 + 1,
        (counter % 17000) / 100 - 85, (counter % 35000) / 100 - 175,
        counter % 10 == 0 and "true" or "false")
    return user, body
end

local function post(path, user, body)
    return wrk.format("POST", path, {
        ["Accept"] = "application/json",
        ["Authorization"] = user.authorization,
        ["Content-Type"] = "application/json",
    }, body)
end

local function create_request()
    local user, body = next_location()
    return post("/v1/locations", user, body)
end

local function push_request()
    local user, body = next_location()
    return post("/v1/sync/push", user, '{"changes":[{"type":"location","action":"create","data":' .. body .. '}]}')
end

local UPDATED_PER_THREAD = 200
local updated = {}

-- A create of the thread's next location until it has UPDATED_PER_THREAD, then a PUT of one of
-- them in turn (the same body, renamed).
local function update_request()
    if #updated < UPDATED_PER_THREAD then
        local user, body = next_location()
        updated[#updated + 1] = { user = user, body = body, id = string.match(body, '"id":"([^"]+)"') }
        return post("/v1/locations", user, body)
    end
    counter = counter + 1
    local location = updated[counter % UPDATED_PER_THREAD + 1]
    local body = string.gsub(location.body, '"name":"[^"]*"', '"name":"Bench place renamed ' .. counter .. '"')
    return wrk.format("PUT", "/v1/locations/" .. location.id, {
        ["Accept"] = "application/json",
        ["Authorization"] = location.user.authorization,
        ["Content-Type"] = "application/json",
    }, body)
end

function request()
    if workload == "create" then
        return create_request()
    elseif workload == "update" then
        return update_request()
    elseif workload == "push" then
        return push_request()
    end
    cursor = cursor % #prepared + 1
    return prepared[cursor]
end

-- Runs in the main state after the run; latencies are in microseconds.
function done(summary, latency, requests)
    local errors = summary.errors
    io.write(string.format(
        'BENCH_RESULT {"requests":%d,"duration_us":%d,"bytes":%d,'
            .. '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},'
            .. '"latency_us":{"min":%d,"mean":%.1f,"stdev":%.1f,"max":%d,"p50":%d,"p75":%d,"p90":%d,"p99":%d,"p999":%d}}\n',
        summary.requests, summary.duration, summary.bytes,
        errors.connect, errors.read, errors.write, errors.status, errors.timeout,
        latency.min, latency.mean, latency.stdev, latency.max,
        latency:percentile(50), latency:percentile(75), latency:percentile(90),
        latency:percentile(99), latency:percentile(99.9)))
end
