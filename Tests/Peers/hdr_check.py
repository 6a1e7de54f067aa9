"""Cross-checks wsload's Histogram against the reference Python HdrHistogram (`pip install hdrhistogram`).

Reads a JSON request {lowest, highest, digits, values: [[value, count]...], blob, percentiles} from the file
named on the command line; records the same values with hdrh; prints JSON with hdrh's statistics, hdrh's own
encoding of them, and what hdrh reads back from wsload's blob.
"""
import json
import sys

from hdrh.histogram import HdrHistogram


def stats(histogram, percentiles):
    return {
        "total": histogram.get_total_count(),
        "min": histogram.get_min_value(),
        "max": histogram.get_max_value(),
        "mean": histogram.get_mean_value(),
        "stdev": histogram.get_stddev(),
        "percentiles": [histogram.get_value_at_percentile(p) for p in percentiles],
    }


def main():
    with open(sys.argv[1]) as handle:
        request = json.load(handle)
    histogram = HdrHistogram(request["lowest"], request["highest"], request["digits"])
    for value, count in request["values"]:
        histogram.record_value(value, count)
    decoded = HdrHistogram.decode(request["blob"])
    same_counts = all(
        histogram.get_count_at_index(i) == decoded.get_count_at_index(i) for i in range(histogram.counts_len)
    )
    print(json.dumps({
        "reference": stats(histogram, request["percentiles"]),
        "decoded": stats(decoded, request["percentiles"]),
        "decodedCountsEqual": same_counts,
        "blob": histogram.encode().decode("ascii"),
    }))


main()
