-- Fragment (not a script): a run's terminal statuses (I7: never left, never overwritten), taken in with
-- `--#include terminal`; graphcore.backend.runs.RunStatus names them. finished(status) is whether `status`
-- (a run hash's 'status'; false or nil when the run has none) is one of them.
local TERMINAL = {completed = true, failed = true, canceled = true}
local function finished(status)
  return TERMINAL[status] == true
end
