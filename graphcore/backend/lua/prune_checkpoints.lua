-- Keep one checkpoint per thread namespace, its working state (R5, GRAPHQ_ENABLE_CHECKPOINTING=false): run
-- in the same MULTI as the write that stores checkpoint ARGV[1] (commit_step.lua or put_checkpoint.lua),
-- after it. Only when that write made ARGV[1] the namespace's head (it was applied: not refused by a fence
-- or an append guard) does it drop every other checkpoint record of the namespace, trim the history to
-- ARGV[1], and delete what only the previous head referenced. Idempotent: a commit retried after a lost
-- reply prunes again, deleting nothing more.
-- KEYS[1] checkpoint hash, KEYS[2] history list, KEYS[3..] value hashes and keys to delete (by index)
-- ARGV[1] the new head's checkpoint id; ARGV[2] n, then n × (key index, field) to delete from value hashes;
-- then m, then m × key index of keys to delete
-- Returns 1 when it pruned, 0 when the write was not applied (nothing changed).
if redis.call('LINDEX', KEYS[2], -1) ~= ARGV[1] then return 0 end
for _, id in ipairs(redis.call('LRANGE', KEYS[2], 0, -2)) do
  if id ~= ARGV[1] then redis.call('HDEL', KEYS[1], id) end
end
redis.call('LTRIM', KEYS[2], -1, -1)
local i = 3
for _ = 1, tonumber(ARGV[2]) do
  redis.call('HDEL', KEYS[tonumber(ARGV[i])], ARGV[i + 1]); i = i + 2
end
local m = tonumber(ARGV[i]); i = i + 1
for _ = 1, m do redis.call('DEL', KEYS[tonumber(ARGV[i])]); i = i + 1 end
return 1
