-- Take or keep an owner-token lock (one active instance of a loop per cluster: the reaper, the
-- request-expiry scan, the retention sweep, ...): the owner's token extends it (compare-and-expire); a free
-- lock is taken; a lock held by another token is never touched.
-- KEYS[1] = the lock; ARGV[1] = owner token; ARGV[2] = time-to-live in milliseconds
-- Returns 1 when the caller holds the lock now, 0 when another owner does.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
