-- wrk script of scripts/load: every connection is a phone idling on a keep-alive connection,
-- sending an authenticated read every few seconds, so 10,000 connections stay open with
-- requests flowing through all of them. Tokens (one user per wrk thread) come from
-- LOCIFY_TOKENS (comma-separated); LOCIFY_DELAY_MS is the mean pause between two requests of
-- a connection (uniform in [0, 2 * mean]). wrk delays a connection's first request too, and the
-- server closes a new connection that stays silent for its 10 s header timeout, so the first
-- request of each connection comes within LOCIFY_FIRST_REQUEST_WINDOW_MS (default 3 s: wrk itself
-- falls seconds behind while it opens 10,000 connections, and a first request it sends after 10 s
-- meets a closed connection). delay() cannot tell a connection's first request from a later one,
-- so every delay is short for the first LOCIFY_CONNECTIONS_PER_THREAD delays of a thread and for
-- its first 8 seconds (counting alone let quick connections' second requests use up the short
-- delays while later connections were still opening: hundreds of them then waited past 10 s).

local tokens = {}
for t in string.gmatch(os.getenv("LOCIFY_TOKENS") or "", "[^,]+") do table.insert(tokens, t) end
local mean_delay = tonumber(os.getenv("LOCIFY_DELAY_MS") or "12000")
local first_requests = tonumber(os.getenv("LOCIFY_CONNECTIONS_PER_THREAD") or "0")
local first_window = tonumber(os.getenv("LOCIFY_FIRST_REQUEST_WINDOW_MS") or "3000")
local paths = { "/v1/categories", "/v1/locations?size=20", "/v1/users/me", "/v1/locations?size=5&sort=name", "/v1/info" }
local threads = {}
local counter = 0

function setup(thread)
    counter = counter + 1
    thread:set("token", tokens[(counter - 1) % #tokens + 1])
    thread:set("seed", counter)
    table.insert(threads, thread)
end

function init(args)
    started = os.time()
    math.randomseed(started + seed)
    statuses = {}
    delays = 0
end

function delay()
    delays = delays + 1
    if delays <= first_requests or os.time() - started < 8 then return math.random(0, first_window) end
    return math.random(0, 2 * mean_delay)
end

function request()
    return wrk.format("GET", paths[math.random(#paths)], { ["Authorization"] = "Bearer " .. token })
end

function response(status, headers, body)
    statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
    local total = {}
    for _, thread in ipairs(threads) do
        for status, count in pairs(thread:get("statuses")) do
            total[status] = (total[status] or 0) + count
        end
    end
    local parts = {}
    for status, count in pairs(total) do table.insert(parts, string.format("%d=%d", status, count)) end
    table.sort(parts)
    io.write("statuses: " .. table.concat(parts, " ") .. "\n")
end
