//! The report's plots draw their data: every line, point, box and whisker
//! where the plot's own axes (read back from the SVG's tick labels) say
//! its values are.

mod svg;

use kleinrock_report::palette::{colour, hex};
use kleinrock_report::plots::{boxes, lines, scatter, Series};
use kleinrock_report::run::quantile;
use svg::Plot;

fn series(i: usize, points: Vec<(f64, f64)>) -> Series {
    Series {
        label: Some(format!("alg{i}")),
        colour: colour(i),
        points,
    }
}

#[test]
fn a_line_plot_draws_each_point_where_its_axes_put_it() {
    let a = vec![(0.0, 1.0), (1.0, 2.5), (2.5, 0.5), (4.0, 3.0), (7.5, 2.0)];
    let b = vec![(0.5, 9.0), (3.0, 4.0), (6.0, 6.5)];
    let svg = lines(
        "Throughput",
        "time (s)",
        "Mbit/s",
        &[series(0, a.clone()), series(1, b.clone())],
        false,
        true,
    );
    let plot = Plot::parse(&svg);
    assert_eq!(plot.title(), "Throughput");
    let (x, y) = (plot.x_axis(false), plot.y_axis());
    for (i, data) in [(0, &a), (1, &b)] {
        let c = hex(colour(i));
        plot.assert_line(&format!("series {i}"), &c, false, data);
        // points_too: a dot on each point as well.
        let dots = plot.circles(&c, 3);
        assert_eq!(dots.len(), data.len());
        for (&(px, py), &(dx, dy)) in dots.iter().zip(data.iter()) {
            assert!((px - x.at(dx)).abs() <= 1.0 && (py - y.at(dy)).abs() <= 1.0);
        }
    }
}

#[test]
fn a_log_axis_places_loss_rates_by_their_logarithm() {
    // A loss rate of 0 has no logarithm: it is left out, the rest drawn.
    let data = vec![
        (0.0, 5.0),
        (0.001, 1.0),
        (0.01, 2.0),
        (0.1, 1.5),
        (1.0, 0.2),
        (10.0, 0.1),
    ];
    let svg = lines(
        "Goodput against loss",
        "loss (%)",
        "Mbit/s",
        &[series(2, data.clone())],
        true,
        true,
    );
    let plot = Plot::parse(&svg);
    plot.assert_line("loss", &hex(colour(2)), true, &data[1..]);
    // Powers of ten, equally spaced.
    let x = plot.x_axis(true);
    let steps: Vec<f64> = [0.001, 0.01, 0.1, 1.0, 10.0]
        .windows(2)
        .map(|w| x.at(w[1]) - x.at(w[0]))
        .collect();
    assert!(
        steps.iter().all(|s| (s - steps[0]).abs() <= 1.0),
        "{steps:?}"
    );
}

#[test]
fn a_scatter_draws_every_run_and_each_algorithms_median() {
    let groups = vec![
        (
            "cubic".to_string(),
            colour(0),
            vec![(120.0, 9.5), (131.0, 9.1), (125.0, 9.8)],
        ),
        (
            "cdg".to_string(),
            colour(1),
            vec![(45.0, 8.2), (52.0, 8.9), (48.0, 7.7), (60.0, 8.0)],
        ),
    ];
    let plot = Plot::parse(&scatter("S", "RTT p95 (ms)", "Mbit/s", &groups));
    let (x, y) = (plot.x_axis(false), plot.y_axis());
    let near = |(px, py): (f64, f64), (dx, dy): (f64, f64)| {
        (px - x.at(dx)).abs() <= 1.0 && (py - y.at(dy)).abs() <= 1.0
    };
    for (_, c, pts) in &groups {
        let c = hex(*c);
        let runs = plot.circles(&c, 3);
        assert_eq!(runs.len(), pts.len());
        assert!(runs.iter().zip(pts).all(|(&p, &d)| near(p, d)), "{c}");
        // The median of each coordinate, nearest rank.
        let mut xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
        let mut ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
        let median = (quantile(&mut xs, 0.5), quantile(&mut ys, 0.5));
        let big = plot.circles(&c, 7);
        assert_eq!(big.len(), 1);
        assert!(near(big[0], median), "{c}: median {median:?}");
    }
}

#[test]
fn boxes_span_the_quartiles_with_whiskers_at_the_5th_and_95th() {
    let groups = vec![
        (
            "a".to_string(),
            colour(0),
            (1..=20).map(f64::from).collect(),
        ),
        (
            "b".to_string(),
            colour(1),
            vec![3.0, 30.0, 12.0, 7.5, 22.0, 18.0, 9.0, 25.0, 14.0, 16.0],
        ),
    ];
    let plot = Plot::parse(&boxes("Box", "Mbit/s", &groups));
    let y = plot.y_axis();
    let close = |p: f64, v: f64| (p - y.at(v)).abs() <= 1.0;
    for (i, (_, c, v)) in groups.iter().enumerate() {
        let mut v = v.clone();
        let mut q = |p| quantile(&mut v, p);
        let (p5, p25, p50, p75, p95) = (q(0.05), q(0.25), q(0.5), q(0.75), q(0.95));
        let c = hex(*c);
        // The box, filled, from the 75th percentile down to the 25th.
        let rects = plot.rects(&c);
        assert_eq!(rects.len(), 1, "box {i}");
        let [_, top, _, bottom] = rects[0];
        assert!(close(top, p75) && close(bottom, p25), "box {i}: {rects:?}");
        // The median bar.
        let bar = plot.lines(&c, 3);
        assert_eq!(bar.len(), 1);
        assert!(bar[0].iter().all(|&(_, py)| close(py, p50)), "bar {i}");
        // Whiskers from the box to the 95th and 5th percentiles, each with
        // a cap.
        let thin = plot.lines(&c, 1);
        assert_eq!(thin.len(), 4, "whiskers {i}");
        let ends: Vec<f64> = thin.iter().map(|l| l[1].1).collect();
        assert!(close(ends[0], p95) && close(ends[1], p5), "whiskers {i}");
        assert!(
            close(thin[2][0].1, p95) && close(thin[3][0].1, p5),
            "caps {i}"
        );
    }
}
