"""Reads an HdrHistogram interval log with the reference Python reader (`hdrh.log`) and prints, as JSON,
each interval histogram's tag, start offset, count and a few percentiles."""
import json
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

reader = HistogramLogReader(sys.argv[1], HdrHistogram(1, 3600000000, 3))
entries = []
while True:
    histogram = reader.get_next_interval_histogram()
    if histogram is None:
        break
    entries.append({
        "tag": histogram.get_tag(),
        "start": histogram.get_start_time_stamp() / 1000.0 - reader.start_time_sec,
        "count": histogram.get_total_count(),
        "p50": histogram.get_value_at_percentile(50),
        "p99": histogram.get_value_at_percentile(99),
        "max": histogram.get_max_value(),
    })
print(json.dumps(entries))
