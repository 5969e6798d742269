-- Fragment (not a script): the fence of a step's writes (I1), taken in with `--#include fence` by every
-- script that writes only for the holder of a step's lease (a lapsed or given-back lease holds no token).
-- holds(lease_key, token) is whether the lease key holds the caller's token; each script refuses in its
-- own words (its reply, the refusal counted in the run hash or not).
-- A batch of a split step (_batch.lua) holds a lease of its own: its token is '<hex>#<batch>' and its lease
-- key is the split's hash, whose fields 'l:<batch>' (the token) and 'u:<batch>' (until when, ms, Redis's
-- clock) hold it. Closing the split (deleting the hash) takes every batch's lease back at once.
local function holds(lease_key, token)
  local at = string.find(token, '#', 1, true)
  if at == nil then return redis.call('GET', lease_key) == token end
  local batch = string.sub(token, at + 1)
  local held = redis.call('HMGET', lease_key, 'l:' .. batch, 'u:' .. batch)
  if held[1] ~= token then return false end
  local t = redis.call('TIME')
  return tonumber(held[2]) >= tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
