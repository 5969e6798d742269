-- Fragment (not a script): a split step's record (graphq.worker.step.split), one hash per split step
-- (graphcore.keys.split): 'run' the owning run, 'step' its step (the run's own count), 'tasks', 'size'
-- (tasks per batch), 'batches', 'next' (batches handed out so far), 'done' (batches done), 'finished'
-- (the most tasks done a progress event announced, split_progress.lua), and per batch i: 'l:i'/'u:i' its
-- lease (_fence.lua), 'c:i' how often it was claimed, 'd:i' done, 'f:i' the failure it ended with (JSON),
-- 's:i' its tasks stopped at a subgraph's breakpoint (serde).
-- now_ms() is Redis's clock in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
