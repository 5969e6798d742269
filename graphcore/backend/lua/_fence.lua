-- Fragment (not a script): the fence of a step's writes (I1), taken in with `--#include fence` by every
-- script that writes only for the holder of a step's lease (a lapsed or given-back lease holds no token).
-- holds(lease_key, token) is whether the lease key holds the caller's token; each script refuses in its
-- own words (its reply, the refusal counted in the run hash or not).
local function holds(lease_key, token)
  return redis.call('GET', lease_key) == token
end
