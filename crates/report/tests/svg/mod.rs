//! Reads back what plotters drew into an SVG, so that tests check a plot's
//! data and not only its labels: the lines, circles and rectangles with
//! their colours, and each axis's mapping from data to pixels, taken from
//! its tick labels.
//!
//! Shared by the report's tests and `kleinrock compare`'s
//! (crates/cli/tests/compare.rs includes this file by path).

#![allow(dead_code)]

/// plotters writes `#1F77B4` where the report's palette says `#1f77b4`.
fn same_colour(attr: Option<&str>, colour: &str) -> bool {
    attr.is_some_and(|a| a.eq_ignore_ascii_case(colour))
}

/// One SVG element: its name, attributes and (for `<text>`) its text.
#[derive(Debug)]
pub struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub text: String,
}

impl Element {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A numeric attribute, NaN when missing.
    pub fn num(&self, key: &str) -> f64 {
        self.attr(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    }
}

/// The elements of one `<svg>`, in drawing order.
pub struct Plot {
    pub elements: Vec<Element>,
}

/// Every `<svg>...</svg>` in `html`, in order.
pub fn plots(html: &str) -> Vec<Plot> {
    html.split("<svg ")
        .skip(1)
        .map(|s| Plot::parse(&s[..s.find("</svg>").expect("a closed <svg>")]))
        .collect()
}

impl Plot {
    /// Parses the markup plotters writes: one element per tag, attributes
    /// as `key="value"`, text only inside `<text>`.
    pub fn parse(svg: &str) -> Plot {
        let mut elements = Vec::new();
        let mut rest = svg;
        while let Some(i) = rest.find('<') {
            rest = &rest[i + 1..];
            let end = rest.find('>').expect("a closed tag");
            let tag = rest[..end].trim_end_matches('/');
            rest = &rest[end + 1..];
            if tag.starts_with('/') {
                continue;
            }
            let (name, mut a) = tag.split_once(' ').unwrap_or((tag, ""));
            let mut attrs = Vec::new();
            while let Some(eq) = a.find("=\"") {
                let key = a[..eq].trim().to_string();
                let value = &a[eq + 2..];
                let close = value.find('"').expect("a quoted value");
                attrs.push((key, value[..close].to_string()));
                a = &value[close + 1..];
            }
            let text = if name == "text" {
                rest[..rest.find("</text>").expect("</text>")]
                    .trim()
                    .to_string()
            } else {
                String::new()
            };
            elements.push(Element {
                name: name.to_string(),
                attrs,
                text,
            });
        }
        Plot { elements }
    }

    fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> + 'a {
        self.elements.iter().filter(move |e| e.name == name)
    }

    /// The title: the text in the largest font.
    pub fn title(&self) -> &str {
        self.named("text")
            .max_by(|a, b| a.num("font-size").total_cmp(&b.num("font-size")))
            .map_or("", |e| e.text.as_str())
    }

    /// The points of every line drawn in `colour` (`#rrggbb`), `width`
    /// pixels wide.
    pub fn lines(&self, colour: &str, width: u32) -> Vec<Vec<(f64, f64)>> {
        self.named("polyline")
            .filter(|e| same_colour(e.attr("stroke"), colour))
            .filter(|e| e.attr("stroke-width") == Some(&width.to_string()))
            .map(|e| {
                e.attr("points")
                    .unwrap_or("")
                    .split_whitespace()
                    .map(|p| {
                        let (x, y) = p.split_once(',').expect("x,y");
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect()
            })
            .collect()
    }

    /// The centres of the circles of radius `r` filled with `colour`.
    pub fn circles(&self, colour: &str, r: u32) -> Vec<(f64, f64)> {
        self.named("circle")
            .filter(|e| same_colour(e.attr("fill"), colour))
            .filter(|e| e.attr("r") == Some(&r.to_string()))
            .map(|e| (e.num("cx"), e.num("cy")))
            .collect()
    }

    /// The filled rectangles of `colour`: left, top, right, bottom.
    pub fn rects(&self, colour: &str) -> Vec<[f64; 4]> {
        self.named("rect")
            .filter(|e| same_colour(e.attr("fill"), colour))
            .map(|e| {
                let (x, y) = (e.num("x"), e.num("y"));
                [x, y, x + e.num("width"), y + e.num("height")]
            })
            .collect()
    }

    /// The legend: each entry's label and colour (a short thick line, its
    /// label just after it).
    pub fn legend(&self) -> Vec<(String, String)> {
        self.elements
            .windows(2)
            .filter(|w| w[0].name == "polyline" && w[0].attr("stroke-width") == Some("3"))
            .filter(|w| w[1].name == "text" && w[1].attr("text-anchor") == Some("start"))
            .map(|w| {
                (
                    w[1].text.clone(),
                    w[0].attr("stroke").unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// The colour of the legend entry `label`.
    pub fn colour_of(&self, label: &str) -> String {
        self.legend()
            .into_iter()
            .find(|(l, _)| l == label)
            .unwrap_or_else(|| panic!("no legend entry {label}"))
            .1
    }

    /// Tick labels that are numbers, as (value, the pixel they label).
    fn ticks(&self, anchor: &str, pixel: &str) -> Vec<(f64, f64)> {
        self.named("text")
            .filter(|e| e.attr("text-anchor") == Some(anchor) && e.attr("transform").is_none())
            .filter_map(|e| Some((e.text.parse::<f64>().ok()?, e.num(pixel))))
            .collect()
    }

    /// The y axis, from its labels (right-aligned, left of the plot).
    pub fn y_axis(&self) -> Axis {
        Axis::new(self.ticks("end", "y"), false)
    }

    /// The x axis, from its labels (centred, below the plot); `log`: the
    /// labels are powers of ten on a log10 axis.
    pub fn x_axis(&self, log: bool) -> Axis {
        Axis::new(self.ticks("middle", "x"), log)
    }

    /// Asserts that the one line drawn in `colour` is `data`: as many
    /// points, each where the axes put it, to within the pixel rounding
    /// of the point and of the ticks.
    pub fn assert_line(&self, what: &str, colour: &str, log_x: bool, data: &[(f64, f64)]) {
        let lines = self.lines(colour, 2);
        assert_eq!(lines.len(), 1, "{what}: one line in {colour}");
        let (x, y) = (self.x_axis(log_x), self.y_axis());
        let line = &lines[0];
        assert_eq!(line.len(), data.len(), "{what}: points drawn");
        for (i, (&(px, py), &(dx, dy))) in line.iter().zip(data).enumerate() {
            let want = (x.at(dx), y.at(dy));
            assert!(
                (px - want.0).abs() <= 1.0 && (py - want.1).abs() <= 1.0,
                "{what}: point {i} ({dx}, {dy}) drawn at ({px}, {py}), the axes put it at {want:?}"
            );
        }
    }
}

/// An axis's mapping from a value to a pixel, read from its tick labels.
pub struct Axis {
    /// (value, pixel) of the outermost ticks.
    lo: (f64, f64),
    hi: (f64, f64),
    log: bool,
}

impl Axis {
    fn new(mut ticks: Vec<(f64, f64)>, log: bool) -> Axis {
        if log {
            for t in &mut ticks {
                t.0 = t.0.log10();
            }
        }
        ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert!(ticks.len() >= 2, "an axis with two numeric labels");
        let axis = Axis {
            lo: ticks[0],
            hi: ticks[ticks.len() - 1],
            log: false,
        };
        // Every tick on the line through the outer two: the labels were
        // read right and the axis is linear in them.
        for &(v, p) in &ticks {
            assert!((axis.at(v) - p).abs() <= 1.0, "tick {v} at {p}");
        }
        Axis { log, ..axis }
    }

    /// The pixel of `v`.
    pub fn at(&self, v: f64) -> f64 {
        let v = if self.log { v.log10() } else { v };
        let ((v0, p0), (v1, p1)) = (self.lo, self.hi);
        p0 + (v - v0) * (p1 - p0) / (v1 - v0)
    }
}
