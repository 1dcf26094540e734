-- Shared by meta.lua and signal.lua (loaded with dofile): counts response statuses per thread and
-- prints one machine-readable line at the end.
counts = {}
local threads = {}

function setup(thread)
   thread:set("tid", #threads)
   table.insert(threads, thread)
end

function response(status, headers, body)
   counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
   local total = {}
   local used = 0
   local exhausted = 0
   for _, t in ipairs(threads) do
      for k, v in pairs(t:get("counts") or {}) do total[k] = (total[k] or 0) + v end
      used = used + (t:get("used") or 0)
      exhausted = exhausted + (t:get("exhausted") or 0)
   end
   local parts = {}
   for k, v in pairs(total) do parts[#parts + 1] = string.format('"%d":%d', k, v) end
   local e = summary.errors
   io.write(string.format(
      'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
      '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f},' ..
      '"statuses":{%s},"ids_used":%d,"ids_exhausted":%d}\n',
      summary.requests, summary.duration, summary.bytes,
      e.connect, e.read, e.write, e.status, e.timeout,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
      table.concat(parts, ","), used, exhausted))
end
