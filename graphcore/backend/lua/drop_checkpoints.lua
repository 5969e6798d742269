-- Remove a thread's checkpoints after a run completed (R7, GRAPHQ_KEEP_CHECKPOINTS_AFTER_COMPLETION=false),
-- unless another run of the thread still needs them: one that is active on the thread (queued, running,
-- awaiting input, a continuation) or waiting in its line. Runs after the completing commit, never inside
-- it; idempotent (deleting what is gone changes nothing).
-- KEYS[1] the completed run's hash, KEYS[2] the thread's active run, KEYS[3] the thread's waiting line,
-- KEYS[4] the thread's root history, KEYS[5..] the checkpoint keys to delete (as the caller found them)
-- ARGV[1] the completed run's id; ARGV[2] the root history's last checkpoint id as the caller read it ('' =
-- none): a checkpoint written since (an update_state) makes the caller look again
-- Returns 'removed', 'kept' (another run needs them), 'left' (the run is not completed) or 'changed'.
if redis.call('HGET', KEYS[1], 'status') ~= 'completed' then return 'left' end
local active = redis.call('GET', KEYS[2])
if (active and active ~= ARGV[1]) or redis.call('LLEN', KEYS[3]) > 0 then return 'kept' end
if (redis.call('LINDEX', KEYS[4], -1) or '') ~= ARGV[2] then return 'changed' end
for i = 5, #KEYS do redis.call('DEL', KEYS[i]) end
return 'removed'
