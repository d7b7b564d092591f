//! The report's plots, drawn with plotters into SVG strings. Each has a
//! title, axis descriptions with units, and a legend of algorithms; a plot
//! with nothing to show says so instead of drawing empty axes.

use plotters::prelude::*;

/// Points of one algorithm: its legend label, its colour, the points.
pub type Group<T> = (String, RGBColor, Vec<T>);

/// One line (or point set) of a plot.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend entry; `None` for a line that shares its algorithm's entry.
    pub label: Option<String>,
    pub colour: RGBColor,
    pub points: Vec<(f64, f64)>,
}

pub const WIDTH: u32 = 760;
pub const HEIGHT: u32 = 400;
const FONT: &str = "sans-serif";

fn span(lo: f64, hi: f64, from_zero: bool) -> (f64, f64) {
    let lo = if from_zero { lo.min(0.0) } else { lo };
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        return (
            lo - 0.5f64.max(lo.abs() * 0.1),
            hi + 0.5f64.max(hi.abs() * 0.1),
        );
    }
    let pad = (hi - lo) * 0.04;
    (if from_zero && lo >= 0.0 { lo } else { lo - pad }, hi + pad)
}

fn bounds(series: &[Series]) -> Option<((f64, f64), (f64, f64))> {
    let pts = series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|p| p.0.is_finite() && p.1.is_finite());
    let mut it = pts.peekable();
    it.peek()?;
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in it {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    Some(((x0, x1), (y0, y1)))
}

/// Legend entries, drawn in a strip right of the plot so that they never
/// cover data.
type Legend = Vec<(String, RGBColor)>;

/// Splits `root` into the plot's area and, if there are entries, a legend
/// strip wide enough for the longest label.
fn with_legend<'a>(
    root: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    legend: &Legend,
) -> DrawingArea<SVGBackend<'a>, plotters::coord::Shift> {
    if legend.is_empty() {
        return root.clone();
    }
    let longest = legend
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let strip = (longest * 7 + 40).clamp(90, 320);
    let (plot, side) = root.split_horizontally(WIDTH - strip);
    for (i, (label, colour)) in legend.iter().enumerate() {
        let y = 50 + 22 * i as i32;
        let _ = side.draw(&PathElement::new(
            vec![(4, y), (24, y)],
            colour.stroke_width(3),
        ));
        let _ = side.draw(&Text::new(
            label.clone(),
            (30, y - 7),
            (FONT, 13).into_font(),
        ));
    }
    plot
}

fn empty(title: &str, why: &str) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 120)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let _ = root.draw(&Text::new(
            title.to_string(),
            (20, 20),
            (FONT, 20).into_font(),
        ));
        let _ = root.draw(&Text::new(
            why.to_string(),
            (20, 60),
            (FONT, 15).into_font().color(&RGBColor(90, 90, 90)),
        ));
    }
    svg
}

/// Lines against a shared x axis (`log_x`: a log10 axis, for loss rates).
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    log_x: bool,
    points_too: bool,
) -> String {
    let series: Vec<Series> = if log_x {
        series
            .iter()
            .map(|s| Series {
                points: s
                    .points
                    .iter()
                    .filter(|p| p.0 > 0.0)
                    .map(|&(x, y)| (x.log10(), y))
                    .collect(),
                ..s.clone()
            })
            .collect()
    } else {
        series.to_vec()
    };
    let Some(((x0, x1), (y0, y1))) = bounds(&series) else {
        return empty(title, "No data for this plot in these runs.");
    };
    let (x0, x1) = if log_x {
        (x0.floor(), x1.ceil().max(x0.floor() + 1.0))
    } else {
        span(x0, x1, false)
    };
    let (y0, y1) = span(y0, y1, true);
    let legend: Legend = series
        .iter()
        .filter_map(|s| s.label.clone().map(|l| (l, s.colour)))
        .collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).expect("svg");
        let area = with_legend(&root, &legend);
        let mut chart = ChartBuilder::on(&area)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .expect("svg");
        let fmt_x = |v: &f64| {
            if log_x {
                let x = 10f64.powf(*v);
                if x >= 1.0 {
                    format!("{x:.0}")
                } else {
                    format!("{x}")
                }
            } else {
                format!("{}", (v * 1000.0).round() / 1000.0)
            }
        };
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_labels(if log_x { (x1 - x0) as usize + 1 } else { 10 })
            .x_label_formatter(&fmt_x)
            .light_line_style(RGBColor(235, 235, 235))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .expect("svg");
        for s in &series {
            let colour = s.colour;
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    colour.stroke_width(2),
                ))
                .expect("svg");
            if points_too {
                chart
                    .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                    .expect("svg");
            }
        }
    }
    svg
}

/// Throughput against delay, one point per run and a larger one for each
/// algorithm's median (Pantheon's summary plot, with delay growing to the
/// right).
pub fn scatter(title: &str, x_desc: &str, y_desc: &str, groups: &[Group<(f64, f64)>]) -> String {
    let series: Vec<Series> = groups
        .iter()
        .map(|(l, c, p)| Series {
            label: Some(l.clone()),
            colour: *c,
            points: p.clone(),
        })
        .collect();
    let Some(((x0, x1), (y0, y1))) = bounds(&series) else {
        return empty(title, "No data for this plot in these runs.");
    };
    // Room around the extremes for the median markers.
    let widen = |(lo, hi): (f64, f64)| {
        let pad = (hi - lo) * 0.08;
        (lo - pad, hi + pad)
    };
    let (x0, x1) = widen(span(x0, x1, false));
    let (y0, y1) = widen(span(y0, y1, false));
    let legend: Legend = groups.iter().map(|(l, c, _)| (l.clone(), *c)).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).expect("svg");
        let area = with_legend(&root, &legend);
        let mut chart = ChartBuilder::on(&area)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, y0..y1)
            .expect("svg");
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .light_line_style(RGBColor(235, 235, 235))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .expect("svg");
        for (_, colour, pts) in groups {
            let colour = *colour;
            chart
                .draw_series(
                    pts.iter()
                        .map(|&p| Circle::new(p, 3, colour.mix(0.5).filled())),
                )
                .expect("svg");
            let mut xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
            let mut ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
            if xs.is_empty() {
                continue;
            }
            let m = (
                crate::run::quantile(&mut xs, 0.5),
                crate::run::quantile(&mut ys, 0.5),
            );
            chart
                .draw_series(std::iter::once(Circle::new(m, 7, colour.filled())))
                .expect("svg");
        }
    }
    svg
}

/// Box plots, one per group: the box spans the 25th to 75th percentile,
/// the bar is the median, the whiskers reach the 5th and 95th.
pub fn boxes(title: &str, y_desc: &str, groups: &[Group<f64>]) -> String {
    let all: Vec<f64> = groups
        .iter()
        .flat_map(|g| g.2.iter().copied())
        .filter(|v| v.is_finite())
        .collect();
    if all.is_empty() {
        return empty(title, "No data for this plot in these runs.");
    }
    let lo = all.iter().copied().fold(f64::MAX, f64::min);
    let hi = all.iter().copied().fold(f64::MIN, f64::max);
    let (y0, y1) = span(lo, hi, true);
    let n = groups.len();
    let names: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).expect("svg");
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), y0..y1)
            .expect("svg");
        let fmt = |v: &f64| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
                names[i as usize].clone()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n.max(1) * 2 + 1)
            .x_label_formatter(&fmt)
            .y_desc(y_desc)
            .light_line_style(RGBColor(235, 235, 235))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .expect("svg");
        for (i, (_, colour, v)) in groups.iter().enumerate() {
            let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
            if v.is_empty() {
                continue;
            }
            let mut q = |p| crate::run::quantile(&mut v, p);
            let (p5, p25, p50, p75, p95) = (q(0.05), q(0.25), q(0.5), q(0.75), q(0.95));
            let x = i as f64;
            let (l, r) = (x - 0.3, x + 0.3);
            let c = *colour;
            chart
                .draw_series([
                    Rectangle::new([(l, p25), (r, p75)], c.mix(0.35).filled()),
                    Rectangle::new([(l, p25), (r, p75)], c.stroke_width(2)),
                ])
                .expect("svg");
            chart
                .draw_series([
                    PathElement::new(vec![(l, p50), (r, p50)], c.stroke_width(3)),
                    PathElement::new(vec![(x, p75), (x, p95)], c.stroke_width(1)),
                    PathElement::new(vec![(x, p25), (x, p5)], c.stroke_width(1)),
                    PathElement::new(vec![(x - 0.12, p95), (x + 0.12, p95)], c.stroke_width(1)),
                    PathElement::new(vec![(x - 0.12, p5), (x + 0.12, p5)], c.stroke_width(1)),
                ])
                .expect("svg");
        }
    }
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    // The labels and the empty plot's message; that each plot draws its
    // data where its axes say is tests/plots.rs's.
    #[test]
    fn plots_are_svg_with_their_labels_and_empty_plots_say_so() {
        let s = Series {
            label: Some("cubic".into()),
            colour: RGBColor(1, 2, 3),
            points: vec![(0.0, 1.0), (1.0, 2.0)],
        };
        let svg = lines(
            "Throughput",
            "time (s)",
            "Mbit/s",
            std::slice::from_ref(&s),
            false,
            false,
        );
        assert!(svg.starts_with("<svg"));
        for text in ["Throughput", "time (s)", "Mbit/s", "cubic"] {
            assert!(svg.contains(text), "{text}");
        }
        let svg = lines(
            "Loss",
            "loss (%)",
            "Mbit/s",
            &[Series {
                points: vec![(0.001, 1.0), (10.0, 2.0)],
                ..s.clone()
            }],
            true,
            true,
        );
        assert!(
            svg.contains("\n0.001\n") && svg.contains("\n10\n"),
            "log axis labels"
        );
        let none = lines(
            "Nothing",
            "x",
            "y",
            &[Series {
                points: vec![],
                ..s
            }],
            false,
            false,
        );
        assert!(none.contains("No data"));
        let b = boxes(
            "Box",
            "Mbit/s",
            &[("bbr".into(), RGBColor(1, 1, 1), vec![1.0, 2.0, 3.0])],
        );
        assert!(b.contains("\nbbr\n"));
        let sc = scatter(
            "S",
            "delay (ms)",
            "Mbit/s",
            &[("cdg".into(), RGBColor(1, 1, 1), vec![(40.0, 9.0)])],
        );
        assert!(sc.contains("cdg"));
    }
}
