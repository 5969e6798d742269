-- Close a split step, fenced by the step's lease (I1): its record and every batch's lease go (a batch still
-- running is refused its writes from now on), before the step commits, pauses or ends its run.
-- KEYS[1] = the step's lease key; KEYS[2] = the split's hash; KEYS[3] = its list of batches done
-- ARGV[1] = lease token
-- Returns 1 when closed, 0 when the lease is not held (nothing written).
--#include fence
if not holds(KEYS[1], ARGV[1]) then return 0 end
redis.call('DEL', KEYS[2], KEYS[3])
return 1
