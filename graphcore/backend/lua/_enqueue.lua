-- Fragment (not a script): enqueue_job(job, queue, queues, steps, job_id, step_member, now_ms, fields) writes
-- a step job as RQ's enqueue (Queue.enqueue_call) does — the queue joins RQ's set of queues, the job hash is
-- written, its id pushed on the queue — and indexes it among the unclaimed step jobs (graphcore.keys
-- steps_index, scored now_ms; its claim takes it out). fields: the job hash, a list of field/value pairs
-- as RQ reads them, from RQ's own Job.to_dict (graphq.worker.queue.RQStepQueue.prepare).
local function enqueue_job(job, queue, queues, steps, job_id, step_member, now_ms, fields)
  redis.call('SADD', queues, queue)
  redis.call('HSET', job, unpack(fields))
  redis.call('RPUSH', queue, job_id)
  redis.call('ZADD', steps, now_ms, step_member)
end
