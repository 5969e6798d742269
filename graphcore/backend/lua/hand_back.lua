-- Hand a step job back to the queue of the version its run is pinned to: a worker of another
-- version dequeued it, took nothing (claim_step.lua's code 5), and RQ has recorded the job's end. If the
-- run is still at that step and not finished, the job hash is written afresh (RQ's finished job is
-- replaced: no expiry, out of the finished registry it was put in) and its id pushed on the run's queue,
-- indexed among the unclaimed step jobs (_enqueue.lua). Otherwise nothing changes (the run moved on).
-- KEYS[1] run hash; KEYS[2] job hash; KEYS[3] the run's queue; KEYS[4] RQ's set of queues; KEYS[5] the index
-- of unclaimed step jobs; KEYS[6] the finished registry of the queue the job came from
-- ARGV[1] the job's step; ARGV[2] job id; ARGV[3] its member of KEYS[5]; ARGV[4] now (ms); ARGV[5..] the job
-- hash as field/value pairs (graphq.worker.queue.RQStepQueue.prepare)
-- Returns 1 when handed back, 0 when the run moved on.
--#include terminal
--#include enqueue
local run = redis.call('HMGET', KEYS[1], 'status', 'step')
if not run[1] or finished(run[1]) or run[2] ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[6], ARGV[2])
enqueue_job(KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[2], ARGV[3], tonumber(ARGV[4]), {unpack(ARGV, 5)})
return 1
