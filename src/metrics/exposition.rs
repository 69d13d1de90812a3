//! The two formats `GET /metrics` answers in, and the conversion of the registry's OpenMetrics
//! into the Prometheus text format.

/// The two expositions `GET /metrics` answers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposition {
    /// The Prometheus text format 0.0.4, which every scraper and `promtool check metrics` read.
    Text,
    OpenMetrics,
}

impl Exposition {
    pub fn content_type(self) -> &'static str {
        match self {
            Exposition::Text => "text/plain; version=0.0.4; charset=utf-8",
            Exposition::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }

    /// From a request's `Accept` header: OpenMetrics when the header ranks
    /// `application/openmetrics-text` above everything that would get the text format
    /// (`text/plain`, `text/*`, `*/*`); the text format otherwise, ties and no header included.
    pub fn negotiate(accept: Option<&str>) -> Self {
        let Some(accept) = accept else {
            return Exposition::Text;
        };
        let (mut openmetrics, mut text) = (0.0f64, 0.0f64);
        for range in accept.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let mut quality = 1.0;
            for parameter in parts {
                if let Some((name, value)) = parameter.split_once('=') {
                    if name.trim().eq_ignore_ascii_case("q") {
                        // A q-value that does not parse counts as 0: that range is not wanted.
                        quality = value.trim().parse::<f64>().unwrap_or(0.0).clamp(0.0, 1.0);
                    }
                }
            }
            match media.as_str() {
                "application/openmetrics-text" => openmetrics = openmetrics.max(quality),
                "text/plain" | "text/*" | "*/*" => text = text.max(quality),
                _ => {}
            }
        }
        if openmetrics > 0.0 && openmetrics > text {
            Exposition::OpenMetrics
        } else {
            Exposition::Text
        }
    }
}

/// Rewrites prometheus-client's OpenMetrics output in the Prometheus text format 0.0.4: a
/// counter family is named by its samples' `_total` name (the classic format has no family name
/// apart from its samples, so `# TYPE x counter` over `x_total` samples reads as untyped),
/// `unknown` becomes `untyped`, and `# UNIT`, `# EOF`, `_created` samples and exemplars, which
/// the classic format lacks, are dropped. The registry writes no timestamps, whose units differ.
pub fn openmetrics_to_text(openmetrics: &str) -> String {
    let counters: std::collections::HashSet<&str> = openmetrics
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.split_once(' '))
        .filter(|(_, kind)| kind.trim() == "counter")
        .map(|(name, _)| name)
        .collect();
    let mut text = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let descriptor = ["# HELP ", "# TYPE "]
            .into_iter()
            .find_map(|prefix| line.strip_prefix(prefix).map(|rest| (prefix, rest)));
        if let Some((prefix, rest)) = descriptor {
            let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            let name = if counters.contains(name) {
                format!("{name}_total")
            } else {
                name.to_owned()
            };
            let tail = if prefix == "# TYPE " && tail == "unknown" {
                "untyped"
            } else {
                tail
            };
            text.push_str(prefix);
            text.push_str(&name);
            text.push(' ');
            text.push_str(tail);
            text.push('\n');
            continue;
        }
        if line.starts_with('#') {
            text.push_str(line);
            text.push('\n');
            continue;
        }
        let series_end = series_end(line);
        let name = &line[..line[..series_end].find('{').unwrap_or(series_end)];
        if name
            .strip_suffix("_created")
            .is_some_and(|family| counters.contains(family))
        {
            continue;
        }
        // An exemplar follows the value after " # ".
        let sample = match line[series_end..].find(" # ") {
            Some(at) => &line[..series_end + at],
            None => line,
        };
        text.push_str(sample);
        text.push('\n');
    }
    text
}

/// Where a sample line's series (name and label set) ends: label values may hold spaces,
/// braces and `#`, so the closing brace is found outside quotes.
fn series_end(line: &str) -> usize {
    let Some(open) = line
        .find(['{', ' '])
        .filter(|&at| line[at..].starts_with('{'))
    else {
        return line.find(' ').unwrap_or(line.len());
    };
    let (mut quoted, mut escaped) = (false, false);
    for (offset, c) in line[open..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return open + offset + 1,
            _ => {}
        }
    }
    line.len()
}
