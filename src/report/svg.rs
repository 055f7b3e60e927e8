//! The report's figure: for each benchmark, grouped bars of the metrics it plots (DeltaLogic's
//! failure modes: inertia, over-flip, abstention; every other benchmark its headline metrics) per
//! result, with 95% interval whiskers on a 0–100% axis; one panel per benchmark, stacked, in one
//! standalone SVG document.
//!
//! Nothing in it can be misread: each panel's title says what varies between its groups (models,
//! normalisations, or both) and names the normalisation when it does not vary; every bar carries
//! its value, and its own n where the metric counts fewer items than its group (a 0 bar is a
//! visible mark on the baseline with its `0.0`); both axes have titles.

use super::markdown::estimate;
use super::{by_benchmark, varying, Entry, Setting};
use crate::metrics::Metric;

/// Bar colours in order (Okabe–Ito, safe for colour blindness).
const COLOURS: [&str; 6] = [
    "#D55E00", "#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
];
const BAR_W: f64 = 28.0;
const BAR_GAP: f64 = 4.0;
const GROUP_W: f64 = 180.0;
const PLOT_H: f64 = 240.0;
const LEFT: f64 = 76.0;
const RIGHT: f64 = 24.0;
/// Title, subtitle, legend, and room for the value over a full bar.
const TOP: f64 = 112.0;
/// The bars' own n, the groups' labels (up to three lines) and the x-axis title.
const BOTTOM: f64 = 104.0;
const MIN_W: f64 = 560.0;
/// One legend entry: swatch and a name of up to about 15 characters.
const LEGEND_ITEM_W: f64 = 110.0;
/// Labels longer than this (about a group's width in 12px bold) are shortened, in full in a tooltip.
const LABEL_CHARS: usize = 24;

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The escaped label, cut to [`LABEL_CHARS`] with the full text as a tooltip so that
/// neighbouring groups' labels do not overlap.
fn shortened(label: &str) -> String {
    if label.chars().count() <= LABEL_CHARS {
        return xml_escape(label);
    }
    let cut: String = label.chars().take(LABEL_CHARS - 1).collect();
    format!("{}…<title>{}</title>", xml_escape(&cut), xml_escape(label))
}

/// The y coordinate of a proportion.
fn y(p: f64) -> f64 {
    TOP + PLOT_H * (1.0 - p.clamp(0.0, 1.0))
}

/// The columns a benchmark's panel plots, with their legend names: the bars its evaluation
/// declares, else its headline metrics.
fn plotted(e: &Entry) -> Vec<(usize, &'static str)> {
    let columns = e.evaluation.columns;
    let key = |k: &str| columns.iter().position(|c| c.key == k);
    let bars = e.evaluation.panel.bars;
    if !bars.is_empty() {
        return bars
            .iter()
            .filter_map(|(k, legend)| Some((key(k)?, *legend)))
            .collect();
    }
    let headline = columns.iter().enumerate().filter(|(_, c)| c.headline);
    headline
        .take(COLOURS.len())
        .map(|(i, c)| (i, c.title))
        .collect()
}

/// The figure of a report: a panel per benchmark.
pub fn svg(entries: &[Entry]) -> String {
    let sections = by_benchmark(entries);
    let width = sections
        .iter()
        .map(|s| {
            // Room for the bar groups and for the legend on one line (Belief-R has six).
            let bars = LEFT + group_w(&s[0]) * s.len() as f64 + RIGHT;
            bars.max(LEGEND_ITEM_W * plotted(&s[0]).len() as f64 + 2.0 * RIGHT)
        })
        .fold(MIN_W, f64::max);
    let panel_h = TOP + PLOT_H + BOTTOM;
    let height = panel_h * sections.len() as f64;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    );
    for (i, section) in sections.iter().enumerate() {
        s += &format!(
            "<g class=\"panel\" data-benchmark=\"{}\" transform=\"translate(0 {})\">\n",
            xml_escape(&section[0].benchmark),
            panel_h * i as f64
        );
        s += &panel(section, width);
        s += "</g>\n";
    }
    s += "</svg>\n";
    s
}

/// A group's width: room for its bars, at least the labels' width.
fn group_w(e: &Entry) -> f64 {
    let bars = plotted(e).len() as f64;
    (bars * (BAR_W + BAR_GAP) + 60.0).max(GROUP_W)
}

/// What a panel's groups differ in, for its title and x-axis title: `per model`, `of m per
/// normalisation`, `per model and normalisation` (and set or template when those vary), and the
/// normalisation when every group shares it.
fn varies(entries: &[Entry], settings: &[Setting]) -> (String, String) {
    let distinct = |get: fn(&Entry) -> &str| {
        let mut v: Vec<&str> = entries.iter().map(get).collect();
        v.sort();
        v.dedup();
        v.len()
    };
    let mut what: Vec<String> = Vec::new();
    if distinct(|e| &e.model) > 1 {
        what.push("model".into());
    }
    what.extend(
        settings
            .iter()
            .map(|(title, _)| title.to_lowercase().to_string()),
    );
    let one_model = distinct(|e| &e.model) == 1;
    let title = match (what.is_empty(), one_model) {
        (true, _) => format!("of {}", entries[0].model),
        (false, true) => format!("of {} per {}", entries[0].model, what.join(" and ")),
        (false, false) => format!("per {}", what.join(" and ")),
    };
    let norm = if distinct(|e| &e.normalisation) == 1 {
        format!("; normalisation: {}", entries[0].normalisation)
    } else {
        String::new()
    };
    let axis = if what.is_empty() {
        "one result".to_string()
    } else {
        format!("one group per {}", what.join(" · "))
    };
    (format!("{title}{norm}"), axis)
}

fn panel(entries: &[Entry], width: f64) -> String {
    let first = &entries[0];
    let modes = plotted(first);
    let settings = varying(entries);
    let (what, x_title) = varies(entries, &settings);
    let title = format!(
        "{} {what}",
        first.evaluation.panel.title.unwrap_or(first.title)
    );
    let mut s = format!(
        "<text x=\"{0}\" y=\"26\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">\
         {1}</text>\n\
         <text x=\"{0}\" y=\"46\" text-anchor=\"middle\" fill=\"#555\">\
         bars: value (%); whiskers: 95% bootstrap interval; n: items counted</text>\n",
        width / 2.0,
        xml_escape(&title)
    );
    s += &legend(width, &modes);
    s += &axis(width);
    s += &format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#333\">{}</text>\n",
        (LEFT + width - RIGHT) / 2.0,
        y(0.0) + BOTTOM - 8.0,
        xml_escape(&x_title)
    );
    let gw = group_w(first);
    // Centre the groups when the minimum width leaves room to spare.
    let x0 = (width - RIGHT + LEFT - gw * entries.len() as f64) / 2.0;
    let show_model = settings.is_empty() || entries.iter().any(|e| e.model != first.model);
    for (i, e) in entries.iter().enumerate() {
        s += &bar_group(e, (&settings, show_model), &modes, x0 + gw * i as f64, gw);
    }
    s
}

fn legend(width: f64, modes: &[(usize, &str)]) -> String {
    let mut s = String::from("<g class=\"legend\">\n");
    let x0 = (width - LEGEND_ITEM_W * modes.len() as f64) / 2.0;
    for (i, ((_, name), colour)) in modes.iter().zip(COLOURS).enumerate() {
        let x = x0 + LEGEND_ITEM_W * i as f64;
        s += &format!(
            "<rect x=\"{x}\" y=\"58\" width=\"12\" height=\"12\" fill=\"{colour}\"/>\
             <text x=\"{}\" y=\"68\">{name}</text>\n",
            x + 17.0
        );
    }
    s += "</g>\n";
    s
}

/// Horizontal grid lines with percentage ticks, and the baseline.
fn axis(width: f64) -> String {
    let mut s = String::from("<g class=\"axis\" stroke=\"#ddd\">\n");
    for tick in [0, 25, 50, 75, 100] {
        let ty = y(f64::from(tick) / 100.0);
        s += &format!(
            "<line x1=\"{LEFT}\" y1=\"{ty}\" x2=\"{}\" y2=\"{ty}\"/>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"end\" stroke=\"none\" fill=\"#333\">{tick}%</text>\n",
            width - RIGHT,
            LEFT - 6.0,
            ty + 4.0
        );
    }
    s += &format!(
        "<line x1=\"{LEFT}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\" stroke=\"#333\"/>\n\
         <text transform=\"translate(18 {2}) rotate(-90)\" text-anchor=\"middle\" \
         stroke=\"none\" fill=\"#333\">percent of the items counted</text>\n</g>\n",
        y(0.0),
        width - RIGHT,
        y(0.5)
    );
    s
}

/// One entry's bars, whiskers and labels (model; the varying settings; item count).
fn bar_group(
    e: &Entry,
    (settings, show_model): (&[Setting], bool),
    modes: &[(usize, &str)],
    x0: f64,
    gw: f64,
) -> String {
    let overall = &e.evaluation.groups[0].metrics;
    let mut s = format!(
        "<g class=\"model\" data-model=\"{}\">\n",
        xml_escape(&e.model)
    );
    let bars_w = modes.len() as f64 * BAR_W + (modes.len().max(1) - 1) as f64 * BAR_GAP;
    let left = x0 + (gw - bars_w) / 2.0;
    for (i, ((column, name), colour)) in modes.iter().zip(COLOURS).enumerate() {
        let x = left + i as f64 * (BAR_W + BAR_GAP);
        if let Some(m) = &overall[*column] {
            s += &bar(m, name, colour, x, e.evaluation.n);
        }
    }
    let centre = x0 + gw / 2.0;
    // What tells the groups apart, first and in bold: the model where models vary, else the
    // varying settings (the panel's title names the one model).
    let mut lines = Vec::new();
    if show_model {
        lines.push(e.model.clone());
    }
    let detail: Vec<&str> = settings.iter().map(|(_, get)| get(e)).collect();
    if !detail.is_empty() {
        lines.push(detail.join(" · "));
    }
    lines.push(format!("n = {}", e.evaluation.n));
    for (i, line) in lines.iter().enumerate() {
        s += &format!(
            "<text x=\"{centre}\" y=\"{}\" text-anchor=\"middle\"{}>{}</text>\n",
            y(0.0) + 34.0 + 15.0 * i as f64,
            if i == 0 {
                " font-weight=\"bold\""
            } else {
                " fill=\"#555\""
            },
            shortened(line)
        );
    }
    s += "</g>\n";
    s
}

/// A bar with its interval whisker, its value above and a tooltip, and under the baseline its
/// own n where that differs from its group's `group_n`. A 0 value is a mark on the baseline;
/// an undefined metric shows `n/a` instead.
fn bar(m: &Metric, name: &str, colour: &str, x: f64, group_n: usize) -> String {
    let centre = x + BAR_W / 2.0;
    let tip = format!("{name}: {} (n = {})", estimate(m), m.n);
    let mut s = String::new();
    if m.n != group_n {
        s += &format!(
            "<text x=\"{centre}\" y=\"{}\" text-anchor=\"middle\" font-size=\"9\" fill=\"#555\">\
             n={}</text>\n",
            y(0.0) + 13.0,
            m.n
        );
    }
    let Some(v) = m.value else {
        return s + &format!(
            "<text x=\"{centre}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\" fill=\"#555\">\
             n/a<title>{tip}</title></text>\n",
            y(0.0) - 4.0
        );
    };
    // At least 2 px high: a 0 bar is drawn, on the baseline, not left for missing data.
    let h = (y(0.0) - y(v)).max(2.0);
    s += &format!(
        "<rect x=\"{x}\" y=\"{}\" width=\"{BAR_W}\" height=\"{h}\" fill=\"{colour}\">\
         <title>{tip}</title></rect>\n",
        y(0.0) - h
    );
    let mut top = y(0.0) - h;
    if let (Some(lo), Some(hi)) = (m.lo, m.hi) {
        let (cap_l, cap_r) = (centre - 5.0, centre + 5.0);
        let (ylo, yhi) = (y(lo), y(hi));
        s += &format!(
            "<path d=\"M{centre} {ylo}V{yhi}M{cap_l} {ylo}H{cap_r}M{cap_l} {yhi}H{cap_r}\" \
             stroke=\"#222\" stroke-width=\"1.5\" fill=\"none\"/>\n"
        );
        top = top.min(yhi);
    }
    s += &format!(
        "<text x=\"{centre}\" y=\"{}\" text-anchor=\"middle\" font-size=\"9\">{:.1}</text>\n",
        top - 3.0,
        100.0 * v
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_labels_are_shortened_with_a_tooltip() {
        assert_eq!(shortened("a & b"), "a &amp; b");
        let long = "x".repeat(LABEL_CHARS + 1);
        let short = shortened(&long);
        assert!(short.starts_with(&format!("{}…<title>", "x".repeat(LABEL_CHARS - 1))));
        assert!(short.ends_with(&format!("{long}</title>")));
    }

    /// A panel with as many headline metrics as there are colours (Belief-R plots six) draws
    /// its whole legend inside the figure, whatever the number of models.
    #[test]
    fn every_legend_entry_lies_inside_the_figure() {
        use crate::benchmarks::{Column, Evaluation, Group, Panel};
        const TITLES: [&str; 6] = [
            "Basic-Acc@t",
            "BU-Acc",
            "BM-Acc",
            "BREU",
            "Inertia",
            "Over-flip",
        ];
        const fn column(key: &'static str, title: &'static str) -> Column {
            Column {
                key,
                title,
                headline: true,
            }
        }
        static COLUMNS: [Column; 6] = [
            column("a", TITLES[0]),
            column("b", TITLES[1]),
            column("c", TITLES[2]),
            column("d", TITLES[3]),
            column("e", TITLES[4]),
            column("f", TITLES[5]),
        ];
        let metric = crate::metrics::Metric {
            value: Some(0.5),
            lo: Some(0.4),
            hi: Some(0.6),
            n: 10,
        };
        let entry = |model: &str| Entry {
            benchmark: "belief-r".into(),
            title: "Belief-R",
            model: model.into(),
            set: "s".into(),
            template: "t".into(),
            normalisation: "mean".into(),
            result_id: "00".into(),
            evaluation: Evaluation {
                n: 10,
                columns: &COLUMNS,
                groups: vec![Group::of("overall", "all", [&metric; 6])],
                metrics: serde_json::Value::Null,
                note: "",
                panel: Panel::HEADLINE,
                findings: &[],
            },
        };
        for models in 1..=3 {
            let entries: Vec<Entry> = (0..models).map(|m| entry(&format!("m{m}"))).collect();
            let doc = svg(&entries);
            let width: f64 = doc
                .split("width=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let legend = doc
                .split("<g class=\"legend\">")
                .nth(1)
                .unwrap()
                .split("</g>")
                .next()
                .unwrap();
            let xs: Vec<f64> = legend
                .split("<rect x=\"")
                .skip(1)
                .map(|r| r.split('"').next().unwrap().parse().unwrap())
                .collect();
            assert_eq!(xs.len(), TITLES.len());
            for x in xs {
                assert!(x >= 0.0 && x + LEGEND_ITEM_W <= width, "{x} in {width}");
            }
        }
    }
}
