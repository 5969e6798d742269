-- Admission (R8, R15): the one script that decides which runs hold a slot, so that the number of runs
-- holding one never exceeds a limit, not even for an instant, across every process of the cluster. A run
-- holds its slot from the admission of its first step job until it ends or waits for input; a run over a
-- limit waits here, per tenant, without an RQ job, and the admission that gives it a slot enqueues its step
-- job in the same script. Every run is counted (limits or not), so that turning a limit on is exact.
-- Limits: the caller's (ARGV[2], ARGV[3]) and those the workers published (KEYS[10], one JSON entry per
-- worker id), counting the live workers' (heartbeat expiry in KEYS[15] later than now), or the newest entry
-- when none is live: the lowest of each applies ('' = none), and the weights of the first counted entry (by
-- worker id) that has any. graphcore.backend.published documents and reads them by the same rules. A workflow's own limits travel with each of its runs (wmax, wtmax below: its runs
-- running at once, and per tenant).
-- Fairness: waiting runs form lanes, one per (tenant, workflow), oldest first; tenants are served by stride
-- scheduling: the tenant with the lowest pass among those with an admissible lane goes next and its pass
-- grows by 1000000 / weight; a tenant that starts waiting joins at the current virtual time (so one that
-- was idle is not owed its idle time, and one behind 10,000 waiting runs of another waits ~one slot).
-- The admitted run's own keys (run hash, RQ job hash and queue, RQ's set of queues) cannot be known to the
-- caller in advance (the script picks the run): they are built in Python (graphcore.keys, RQ's Job and
-- Queue) when the run asks for a slot, and kept with its entry; no key is built here.
-- KEYS[1] waiting runs (score 0, members tenant\0workflow\0seq\0member: lanes in order, lex ranges)
-- KEYS[2] lanes (score 0, members tenant\0seq of the lane's oldest\0workflow); KEYS[3] tenants with a
-- waiting run, scored by pass; KEYS[4] tenant -> pass; KEYS[5] state (seq, vtime); KEYS[6] member ->
-- entry (cmsgpack); KEYS[7] member -> deadline (ms); KEYS[8] member -> 'tenant\0workflow' of the runs
-- holding a slot; KEYS[9] counts ('g', 't\0T', 'w\0W', 'x\0W\0T' holding; 'q\0T' waiting); KEYS[10] the
-- workers' published settings (worker id -> JSON with g, t, weights); KEYS[11] the index of unclaimed step
-- jobs; KEYS[12] debug flag (when it exists: the highest counts seen go to KEYS[13] and each admission to
-- the list KEYS[14]); KEYS[15] the worker index (id scored by heartbeat expiry, ms);
-- KEYS[16] the run hash of ARGV[6] (ops release, expire); KEYS[17] its event stream, KEYS[18], KEYS[19] the
-- webhook outbox and its due set (op expire: the run's webhook delivery, _webhook.lua)
-- ARGV[1] op: 'admit', 'release', 'expire' or 'fill'; ARGV[2] the caller's global limit, ARGV[3] its
-- per-tenant limit ('' = none); ARGV[4] its weights 'tenant=w,...' ('' = the published ones); ARGV[5] now in
-- RQ's format (the admitted job's enqueued_at); ARGV[6] member 'thread:run' (all ops but fill)
-- admit:   ARGV[7] tenant, [8] workflow, [9] wmax, [10] wtmax ('' = none), [11] deadline (ms), [12] run
--          key, [13] RQ job key, [14] RQ queue key, [15] RQ's set of queues, [16] job id, [17] the job's
--          member of KEYS[11], [18..] the RQ job hash, field/value pairs (as RQ's enqueue writes it)
-- release: the run stopped holding or waiting (ended, or awaits input): its slot is freed once, or its
--          entry withdrawn; refused while the run (KEYS[16]) is queued or running
-- expire:  ARGV[7] error (JSON), [8] ended_at, [9] data of the 'canceled' status event, [10] its step: a
--          waiting run past its deadline (R15) ends Canceled without ever starting
-- fill:    admit waiting runs while there is room (after limits were raised)
-- Returns {verdict, runs admitted from the waiting lanes}: admit → 'admitted', 'waiting', 'held' (it held
-- a slot already: its job is enqueued); release → 'freed', 'withdrawn', 'none', 'busy'; expire →
-- 'expired', 'dropped' (ended meanwhile), 'early', 'gone'; fill → 'filled'.
--#include events
--#include enqueue
--#include webhook
local SEP = '\0'
local op = ARGV[1]
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local debug = redis.call('EXISTS', KEYS[12]) == 1

local function lower(a, b)
  a, b = tonumber(a), tonumber(b)
  if a and b then return math.min(a, b) end
  return a or b
end
local G, T = tonumber(ARGV[2]), tonumber(ARGV[3])
local weights, weights_by = ARGV[4], nil
local published, counted, newest = redis.call('HGETALL', KEYS[10]), {}, nil
for i = 1, #published, 2 do
  local e = cjson.decode(published[i + 1])
  e.worker = published[i]
  local expiry = redis.call('ZSCORE', KEYS[15], e.worker)
  if expiry and tonumber(expiry) > now_ms then counted[#counted + 1] = e end
  if newest == nil or e.at > newest.at or (e.at == newest.at and e.worker > newest.worker) then newest = e end
end
if #counted == 0 and newest then counted[1] = newest end  -- no worker live: the cluster's last word
for _, e in ipairs(counted) do
  G, T = lower(G, e.g), lower(T, e.t)
  if ARGV[4] == '' and e.weights ~= '' and (weights_by == nil or e.worker < weights_by) then
    weights, weights_by = e.weights, e.worker
  end
end

local function count(field) return tonumber(redis.call('HGET', KEYS[9], field) or '0') end
local function bump(field, by)
  if redis.call('HINCRBY', KEYS[9], field, by) <= 0 then redis.call('HDEL', KEYS[9], field) end
end
local function slot_fields(tenant, workflow)
  return {'g', 't' .. SEP .. tenant, 'w' .. SEP .. workflow, 'x' .. SEP .. workflow .. SEP .. tenant}
end

local function stride(tenant)
  local w = 1
  if weights ~= '' then
    local s = ',' .. weights .. ','
    local _, j = string.find(s, ',' .. tenant .. '=', 1, true)
    if j then w = tonumber(string.match(s, '^(%d+)', j + 1)) or 1 end
  end
  return math.floor(1000000 / w)
end

local function fits(tenant, e)
  if G and count('g') >= G then return false end
  if T and count('t' .. SEP .. tenant) >= T then return false end
  if e.wmax ~= '' and count('w' .. SEP .. e.workflow) >= tonumber(e.wmax) then return false end
  if e.wtmax ~= '' and count('x' .. SEP .. e.workflow .. SEP .. tenant) >= tonumber(e.wtmax) then
    return false
  end
  return true
end

local function lane_head(tenant, workflow)
  local p = tenant .. SEP .. workflow .. SEP
  return redis.call('ZRANGEBYLEX', KEYS[1], '[' .. p, '(' .. tenant .. SEP .. workflow .. '\1', 'LIMIT', 0, 1)[1]
end
local function tenant_lanes(tenant)
  return redis.call('ZRANGEBYLEX', KEYS[2], '[' .. tenant .. SEP, '(' .. tenant .. '\1')
end
local function seq_of(wait_member) return string.match(wait_member, '^[^%z]*%z[^%z]*%z([^%z]*)%z') end
local function member_of(wait_member) return string.match(wait_member, '^[^%z]*%z[^%z]*%z[^%z]*%z(.*)$') end

local function vtime() return tonumber(redis.call('HGET', KEYS[5], 'vtime') or '0') end
local function joined_pass(tenant)
  return math.max(tonumber(redis.call('HGET', KEYS[4], tenant) or '0'), vtime())
end

local function enqueue(e)
  enqueue_job(e.job, e.queue, e.queues, KEYS[11], e.job_id, e.step, now_ms, e.fields)
  redis.call('HSET', e.job, 'enqueued_at', ARGV[5])
end

local function unwait(member, e)
  local tenant, workflow = e.tenant, e.workflow
  local was_head = lane_head(tenant, workflow) == e.wait
  redis.call('ZREM', KEYS[1], e.wait)
  if was_head then
    redis.call('ZREM', KEYS[2], tenant .. SEP .. e.seq .. SEP .. workflow)
    local nxt = lane_head(tenant, workflow)
    if nxt then redis.call('ZADD', KEYS[2], 0, tenant .. SEP .. seq_of(nxt) .. SEP .. workflow) end
  end
  if #tenant_lanes(tenant) == 0 then redis.call('ZREM', KEYS[3], tenant) end
  redis.call('HDEL', KEYS[6], member)
  redis.call('ZREM', KEYS[7], member)
  bump('q' .. SEP .. tenant, -1)
end

local function grant(member, e, waiting)
  local tenant = e.tenant
  local pass = tonumber(redis.call('ZSCORE', KEYS[3], tenant) or '') or joined_pass(tenant)
  if pass > vtime() then redis.call('HSET', KEYS[5], 'vtime', pass) end
  local new = pass + stride(tenant)
  redis.call('HSET', KEYS[4], tenant, new)
  if waiting then unwait(member, e) end
  if redis.call('ZSCORE', KEYS[3], tenant) then redis.call('ZADD', KEYS[3], new, tenant) end
  redis.call('HSET', KEYS[8], member, tenant .. SEP .. e.workflow)
  local fields = slot_fields(tenant, e.workflow)
  for _, f in ipairs(fields) do bump(f, 1) end
  enqueue(e)
  if debug then
    for _, f in ipairs(fields) do
      local n = count(f)
      if n > tonumber(redis.call('HGET', KEYS[13], f) or '0') then redis.call('HSET', KEYS[13], f, n) end
    end
    redis.call('RPUSH', KEYS[14], tenant .. SEP .. member)
  end
end

local function insert(member, e)
  local seq = string.format('%016d', redis.call('HINCRBY', KEYS[5], 'seq', 1))
  e.seq = seq
  e.wait = e.tenant .. SEP .. e.workflow .. SEP .. seq .. SEP .. member
  e.since = now_ms
  if not lane_head(e.tenant, e.workflow) then
    redis.call('ZADD', KEYS[2], 0, e.tenant .. SEP .. seq .. SEP .. e.workflow)
  end
  redis.call('ZADD', KEYS[1], 0, e.wait)
  if not redis.call('ZSCORE', KEYS[3], e.tenant) then
    redis.call('ZADD', KEYS[3], joined_pass(e.tenant), e.tenant)
  end
  redis.call('HSET', KEYS[6], member, cmsgpack.pack(e))
  redis.call('ZADD', KEYS[7], e.deadline, member)
  bump('q' .. SEP .. e.tenant, 1)
end

-- The next run to admit: tenants by pass, each one's lanes oldest first; only lane heads are looked at
-- (a lane's runs share their limits), so the cost is in waiting lanes, not waiting runs.
-- A lane whose head has no entry (or that has no run left) is repaired, never trusted: returns 'again'.
local function repair(tenant, workflow, lane, head)
  if head then redis.call('ZREM', KEYS[1], head) end
  redis.call('ZREM', KEYS[2], lane)
  local nxt = lane_head(tenant, workflow)
  if nxt then redis.call('ZADD', KEYS[2], 0, tenant .. SEP .. seq_of(nxt) .. SEP .. workflow) end
  if #tenant_lanes(tenant) == 0 then redis.call('ZREM', KEYS[3], tenant) end
  return 'again'
end

local function pick()
  local start = 0
  while true do
    local batch = redis.call('ZRANGE', KEYS[3], start, start + 15)
    if #batch == 0 then return nil end
    for _, tenant in ipairs(batch) do
      local lanes = tenant_lanes(tenant)
      if #lanes == 0 then
        redis.call('ZREM', KEYS[3], tenant)
        return 'again'
      end
      if not T or count('t' .. SEP .. tenant) < T then
        for _, lane in ipairs(lanes) do
          local workflow = string.match(lane, '^[^%z]*%z[^%z]*%z(.*)$')
          local head = lane_head(tenant, workflow)
          local raw = head and redis.call('HGET', KEYS[6], member_of(head))
          if not raw then return repair(tenant, workflow, lane, head) end
          local e = cmsgpack.unpack(raw)
          if fits(tenant, e) then return member_of(head), e end
        end
      end
    end
    start = start + 16
  end
end

local function fill()
  local n = 0
  while not G or count('g') < G do
    local member, e = pick()
    if not member then break end
    if member ~= 'again' then
      if redis.call('HGET', e.run, 'status') == 'queued' then
        grant(member, e, true)
        n = n + 1
      else
        unwait(member, e)  -- it ended while waiting (its hand-over will find nothing to free)
      end
    end
  end
  return n
end

if op == 'fill' then return {'filled', fill()} end
local member = ARGV[6]

if op == 'admit' then
  local e = {tenant = ARGV[7], workflow = ARGV[8], wmax = ARGV[9], wtmax = ARGV[10], deadline = ARGV[11],
    run = ARGV[12], job = ARGV[13], queue = ARGV[14], queues = ARGV[15], job_id = ARGV[16], step = ARGV[17],
    fields = {unpack(ARGV, 18)}}
  if redis.call('HEXISTS', KEYS[8], member) == 1 then
    enqueue(e)
    return {'held', 0}
  end
  if redis.call('HEXISTS', KEYS[6], member) == 1 then return {'waiting', 0} end
  if redis.call('ZCARD', KEYS[3]) == 0 and fits(e.tenant, e) then
    grant(member, e, false)
    return {'admitted', 0}
  end
  insert(member, e)
  local n = fill()
  if redis.call('HEXISTS', KEYS[8], member) == 1 then return {'admitted', n - 1} end
  return {'waiting', n}
end

local status = redis.call('HGET', KEYS[16], 'status')
if op == 'release' then
  if status == 'queued' or status == 'running' then return {'busy', 0} end
  local verdict = 'none'
  local held = redis.call('HGET', KEYS[8], member)
  if held then
    redis.call('HDEL', KEYS[8], member)
    local tenant, workflow = string.match(held, '^([^%z]*)%z(.*)$')
    for _, f in ipairs(slot_fields(tenant, workflow)) do bump(f, -1) end
    verdict = 'freed'
  else
    local raw = redis.call('HGET', KEYS[6], member)
    if raw then
      unwait(member, cmsgpack.unpack(raw))
      verdict = 'withdrawn'
    end
  end
  return {verdict, fill()}
end

if op == 'expire' then
  local raw = redis.call('HGET', KEYS[6], member)
  if not raw then return {'gone', 0} end
  local e = cmsgpack.unpack(raw)
  if tonumber(e.deadline) > now_ms then return {'early', 0} end
  unwait(member, e)
  local verdict = 'dropped'
  if status == 'queued' then
    redis.call('HSET', KEYS[16], 'status', 'canceled', 'ended_at', ARGV[8], 'error', ARGV[7])
    run_event(KEYS[17], KEYS[16], 'status', ARGV[10], ARGV[9])
    webhook_due(KEYS[16], 'canceled', KEYS[18], KEYS[19])
    verdict = 'expired'
  end
  return {verdict, fill()}
end
return redis.error_reply('admission: unknown op ' .. tostring(op))
