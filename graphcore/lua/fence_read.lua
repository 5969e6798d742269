-- Read what the fenced commit compares (I1), in one round trip after WATCH.
-- KEYS[1] = run hash; KEYS[2] = lease key
-- Returns {status, step, lease token} (false where absent).
return {redis.call('HGET', KEYS[1], 'status'), redis.call('HGET', KEYS[1], 'step'), redis.call('GET', KEYS[2])}
