//! Hand-written SVG line charts: throughput and p50/p99 response time against offered load or client
//! count, one line per server label, grouped by workload.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::report::StepResult;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 52.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    /// Index into the colour palette (series of the same server share a colour).
    pub color: usize,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" tick step (1, 2 or 5 times a power of ten) giving about five ticks up to `max`.
pub fn nice_step(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let f = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    f * mag
}

fn tick_label(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{}k", (v / 1000.0).round())
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').to_string()
    }
}

/// An SVG line chart; axes start at zero.
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let all = series.iter().flat_map(|s| s.points.iter());
    let x_max = all.clone().map(|p| p.0).fold(0.0, f64::max);
    let y_max = all.map(|p| p.1).fold(0.0, f64::max);
    let (x_step, y_step) = (nice_step(x_max), nice_step(y_max));
    let x_top = ((x_max / x_step).ceil() * x_step).max(x_step);
    let y_top = ((y_max * 1.05 / y_step).ceil() * y_step).max(y_step);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let px = |x: f64| LEFT + x / x_top * plot_w;
    let py = |y: f64| TOP + plot_h - y / y_top * plot_h;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        LEFT + plot_w / 2.0,
        escape(title)
    );
    let mut x = 0.0;
    while x <= x_top + x_step / 2.0 {
        let _ = writeln!(
            svg,
            "<line x1=\"{0:.1}\" y1=\"{1}\" x2=\"{0:.1}\" y2=\"{2}\" stroke=\"#ddd\"/>\
             <text x=\"{0:.1}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
            px(x),
            TOP,
            TOP + plot_h,
            TOP + plot_h + 16.0,
            tick_label(x)
        );
        x += x_step;
    }
    let mut y = 0.0;
    while y <= y_top + y_step / 2.0 {
        let _ = writeln!(
            svg,
            "<line x1=\"{0}\" y1=\"{1:.1}\" x2=\"{2}\" y2=\"{1:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{3}\" y=\"{4:.1}\" text-anchor=\"end\">{5}</text>",
            LEFT,
            py(y),
            LEFT + plot_w,
            LEFT - 6.0,
            py(y) + 4.0,
            tick_label(y)
        );
        y += y_step;
    }
    let _ = writeln!(
        svg,
        "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{plot_w}\" height=\"{plot_h}\" fill=\"none\" stroke=\"#333\"/>"
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 12.0,
        escape(x_label)
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + plot_h / 2.0,
        escape(y_label)
    );
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[s.color % COLORS.len()];
        let dash = if s.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let points: Vec<String> = s
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{}"/>"#,
            points.join(" ")
        );
        for &(x, y) in &s.points {
            let _ = writeln!(
                svg,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                px(x),
                py(y)
            );
        }
        let ly = TOP + 10.0 + i as f64 * 18.0;
        let lx = LEFT + plot_w + 12.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2"{dash}/><text x="{}" y="{}">{}</text>"#,
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// Averages repeated runs at the same x and sorts the points by x.
fn collapse(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let mut by_x: BTreeMap<u64, (f64, f64, u32)> = BTreeMap::new();
    for (x, y) in points {
        let e = by_x.entry(x.to_bits()).or_insert((x, 0.0, 0));
        e.1 += y;
        e.2 += 1;
    }
    let mut out: Vec<(f64, f64)> = by_x
        .into_values()
        .map(|(x, sum, n)| (x, sum / f64::from(n)))
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// The charts of a set of results: for each workload and x-axis (offered rate for open-loop steps, client
/// count for closed-loop ones), throughput and p50/p99 response time. Returns (file name, SVG) pairs.
pub fn charts(results: &[StepResult]) -> Vec<(String, String)> {
    type Key = (String, &'static str);
    let mut groups: BTreeMap<Key, Vec<&StepResult>> = BTreeMap::new();
    for r in results {
        let axis = if r.offered_rate.is_some() {
            "rate"
        } else {
            "clients"
        };
        groups
            .entry((r.workload.clone(), axis))
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for ((workload, axis), rs) in groups {
        let x_of = |r: &StepResult| r.offered_rate.unwrap_or(r.clients as f64);
        let sessions: std::collections::BTreeSet<&str> =
            rs.iter().map(|r| r.session.as_str()).collect();
        let client_counts: std::collections::BTreeSet<usize> =
            rs.iter().map(|r| r.clients).collect();
        // On a rate axis, runs with different client counts are different lines.
        let by_clients = axis == "rate" && client_counts.len() > 1;
        let name_of = |r: &StepResult| {
            let mut name = r.label.clone();
            if sessions.len() > 1 {
                name = format!("{name} ({})", r.session);
            }
            if by_clients {
                name = format!("{name}, {} clients", r.clients);
            }
            name
        };
        let mut lines: BTreeMap<String, Vec<&StepResult>> = BTreeMap::new();
        for r in &rs {
            lines.entry(name_of(r)).or_default().push(r);
        }
        let (mut tput, mut lat) = (Vec::new(), Vec::new());
        for (color, (name, rs)) in lines.iter().enumerate() {
            let pts = |f: &dyn Fn(&StepResult) -> f64| {
                collapse(rs.iter().map(|r| (x_of(r), f(r))).collect())
            };
            tput.push(Series {
                name: name.clone(),
                points: pts(&|r| r.throughput),
                dashed: false,
                color,
            });
            lat.push(Series {
                name: format!("{name} p99"),
                points: pts(&|r| r.response.p99_ms),
                dashed: false,
                color,
            });
            lat.push(Series {
                name: format!("{name} p50"),
                points: pts(&|r| r.response.p50_ms),
                dashed: true,
                color,
            });
        }
        let x_label = if axis == "rate" {
            "offered load (requests/s)"
        } else {
            "clients"
        };
        out.push((
            format!("{workload}-throughput-vs-{axis}.svg"),
            line_chart(
                &format!("{workload}: throughput"),
                x_label,
                "completed requests/s",
                &tput,
            ),
        ));
        out.push((
            format!("{workload}-latency-vs-{axis}.svg"),
            line_chart(
                &format!("{workload}: response time"),
                x_label,
                "response time (ms)",
                &lat,
            ),
        ));
    }
    out
}

/// Writes the charts into `dir` (created if needed); returns the paths written.
pub fn write_charts(results: &[StepResult], dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for (name, svg) in charts(results) {
        let path = dir.join(name);
        std::fs::write(&path, svg)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::sample;

    #[test]
    fn nice_steps() {
        let check = |max: f64, want: f64| assert_eq!(nice_step(max), want, "{max}");
        check(100.0, 20.0);
        check(30_000.0, 10_000.0);
        check(7.0, 2.0);
        check(0.9, 0.2);
        check(0.0, 1.0);
        check(f64::NAN, 1.0);
    }

    #[test]
    fn one_chart_pair_per_workload_and_axis() {
        let results = vec![
            sample("canopy", 16, None, 500.0),
            sample("canopy", 64, None, 700.0),
            sample("slapd", 16, None, 400.0),
            sample("canopy", 16, Some(1000.0), 900.0),
        ];
        let charts = charts(&results);
        let names: Vec<&str> = charts.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "search-throughput-vs-clients.svg",
                "search-latency-vs-clients.svg",
                "search-throughput-vs-rate.svg",
                "search-latency-vs-rate.svg"
            ]
        );
        let (_, svg) = &charts[0];
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains(">canopy</text>") && svg.contains(">slapd</text>"));
        assert_eq!(charts[1].1.matches("<polyline").count(), 4);
    }

    #[test]
    fn rate_lines_split_by_client_count() {
        let results = vec![
            sample("canopy", 16, Some(1000.0), 900.0),
            sample("canopy", 64, Some(1000.0), 950.0),
            sample("canopy", 64, Some(2000.0), 1900.0),
        ];
        let charts = charts(&results);
        let svg = &charts[0].1;
        assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
        assert!(
            svg.contains(">canopy, 16 clients</text>")
                && svg.contains(">canopy, 64 clients</text>")
        );
    }

    #[test]
    fn repeated_points_are_averaged() {
        assert_eq!(
            collapse(vec![(2.0, 10.0), (1.0, 5.0), (2.0, 20.0)]),
            vec![(1.0, 5.0), (2.0, 15.0)]
        );
    }

    #[test]
    fn labels_are_escaped() {
        let s = Series {
            name: "a<b&c".into(),
            points: vec![(1.0, 1.0)],
            dashed: false,
            color: 0,
        };
        let svg = line_chart("t", "x", "y", &[s]);
        assert!(svg.contains("a&lt;b&amp;c") && !svg.contains("a<b"));
    }
}
