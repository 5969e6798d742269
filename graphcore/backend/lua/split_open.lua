-- Open a split step (graphq.worker.step.split), fenced by the step's lease (I1): create its record, or join
-- the record an earlier owner of the same step left (it died: its batches go on; 'run' becomes this run).
-- With a thread TTL (K3, _retain.lua) the hash and the list join the thread's key set and take its expiry.
-- KEYS[1] = the step's lease key; KEYS[2] = the split's hash; KEYS[3] = its list of batches done;
-- KEYS[4] = the thread's key set
-- ARGV[1] = lease token; ARGV[2] = run id; ARGV[3] = the run's step; ARGV[4] = tasks; ARGV[5] = tasks per
-- batch; ARGV[6] = batches; ARGV[7] = the record's time-to-live, ms; ARGV[8] = tasks finished already
-- (the owner's first progress event says so: 'finished', the most an event announced, is at least that)
-- Returns 0 when the lease is not held (nothing written); 1 when created; 2 when joined.
--#include retain
--#include fence
if not holds(KEYS[1], ARGV[1]) then return 0 end
local joined = redis.call('HGET', KEYS[2], 'tasks') == ARGV[4] and redis.call('HGET', KEYS[2], 'size') == ARGV[5]
if joined then
  local finished = math.max(tonumber(redis.call('HGET', KEYS[2], 'finished')), tonumber(ARGV[8]))
  redis.call('HSET', KEYS[2], 'run', ARGV[2], 'step', ARGV[3], 'finished', finished)
else
  redis.call('DEL', KEYS[2], KEYS[3])
  redis.call('HSET', KEYS[2], 'run', ARGV[2], 'step', ARGV[3], 'tasks', ARGV[4], 'size', ARGV[5],
    'batches', ARGV[6], 'next', 0, 'done', 0, 'finished', ARGV[8])
end
redis.call('PEXPIRE', KEYS[2], ARGV[7])
retain_keys(KEYS[4], KEYS[2], KEYS[3])
if joined then return 2 end
return 1
