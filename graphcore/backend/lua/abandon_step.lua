-- Close a run whose step is abandoned before it ended (R17 drain, a blocked node past its deadline): only
-- while the caller still holds the step's lease (I1), and only from a non-terminal status (I7). The lease
-- is given back in the same script; the run's checkpoints are kept.
-- The close adds the run's webhook delivery (_webhook.lua).
-- KEYS[1] = lease key; KEYS[2] = run hash; KEYS[3] = the run's event stream; KEYS[4] = the lease index;
-- KEYS[5], KEYS[6] = the webhook outbox and its due set
-- ARGV[1] = lease token; ARGV[2] = new status; ARGV[3] = now (ISO-8601, ended_at); ARGV[4] = the error
-- record (JSON); ARGV[5] = the status event's step ('' = the run's step); ARGV[6] = its data (msgpack);
-- ARGV[7] = the run's member of the lease index
-- Returns 1 when the run was closed, also when this very close was made before (a retry after its reply
-- was lost: the run has the status, ended_at and error it wrote), 0 when the lease is not the caller's (or
-- the run had ended).
--#include events
--#include fence
--#include terminal
--#include webhook
if not holds(KEYS[1], ARGV[1]) then
  local was = redis.call('HMGET', KEYS[2], 'status', 'ended_at', 'error')
  if was[1] == ARGV[2] and was[2] == ARGV[3] and was[3] == ARGV[4] then return 1 end
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[4], ARGV[7])
local status = redis.call('HGET', KEYS[2], 'status')
if not status or finished(status) then return 0 end
redis.call('HSET', KEYS[2], 'status', ARGV[2], 'ended_at', ARGV[3], 'error', ARGV[4])
local step = ARGV[5]
if step == '' then step = redis.call('HGET', KEYS[2], 'step') or '0' end
run_event(KEYS[3], KEYS[2], 'status', step, ARGV[6])
webhook_due(KEYS[2], ARGV[2], KEYS[5], KEYS[6])
return 1
