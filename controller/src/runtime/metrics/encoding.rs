//! Deterministic OpenMetrics text: the samples of each metric sorted by series, so the output
//! does not depend on the hash-map order inside `prometheus_client`.

/// Sorts the sample lines between metadata lines (`# HELP`, `# TYPE`, `# UNIT`, `# EOF`),
/// keeping each histogram's bucket lines in bucket order (they share a label-set prefix and
/// differ only in `le`, which must stay ascending, so samples are grouped by series first).
pub(super) fn sort_samples(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut block: Vec<&str> = Vec::new();
    let flush = |block: &mut Vec<&str>, out: &mut String| {
        // Stable sort by the series key: the line with any `le="..."` label and value removed.
        block.sort_by_key(|line| series_key(line));
        for line in block.drain(..) {
            out.push_str(line);
            out.push('\n');
        }
    };
    for line in raw.lines() {
        if line.starts_with('#') {
            flush(&mut block, &mut out);
            out.push_str(line);
            out.push('\n');
        } else {
            block.push(line);
        }
    }
    flush(&mut block, &mut out);
    out
}

fn series_key(line: &str) -> (String, String, u8) {
    let series = line.rsplit_once(' ').map_or(line, |(series, _value)| series);
    let (name, labels) = match series.split_once('{') {
        Some((name, rest)) => (name, rest.strip_suffix('}').unwrap_or(rest)),
        None => (series, ""),
    };
    // Without `le`, a histogram's buckets share one key and the stable sort keeps their
    // encoded (ascending) order.
    let labels: Vec<&str> = labels.split(',').filter(|label| !label.starts_with("le=")).collect();
    // Within a series: buckets, then sum, then count, as encoded.
    let (base, rank) = if let Some(base) = name.strip_suffix("_bucket") {
        (base, 0)
    } else if let Some(base) = name.strip_suffix("_sum") {
        (base, 1)
    } else if let Some(base) = name.strip_suffix("_count") {
        (base, 2)
    } else {
        (name, 0)
    };
    (labels.join(","), base.to_string(), rank)
}
