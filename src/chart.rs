//! Pictures of the numbers: bar charts of photos per second, as SVG or PNG.

use std::path::Path;
use std::sync::Once;

use anyhow::{Result, anyhow, bail};
use image::ImageEncoder;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use crate::saved_model::write_atomically;

/// One group of bars: a label under it and a value per series.
pub struct BarGroup {
    pub label: String,
    pub values: Vec<f64>,
}

/// A grouped bar chart.
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    /// Names of the bars within each group, for the legend.
    pub series: Vec<String>,
    pub groups: Vec<BarGroup>,
}

const WIDTH: u32 = 900;
const HEIGHT: u32 = 520;
const COLORS: [RGBColor; 3] = [
    RGBColor(52, 101, 164),
    RGBColor(245, 121, 0),
    RGBColor(78, 154, 6),
];

/// Writes `chart` to `path`, as SVG or PNG by its extension. The y axis is logarithmic
/// when the largest value is more than 20 times the smallest.
pub fn write(chart: &BarChart, path: &Path) -> Result<()> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    // Both backends measure text with the bundled font to lay the chart out.
    register_font();
    let bytes = match extension.as_deref() {
        Some("svg") => {
            let mut svg = String::new();
            draw(
                chart,
                SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area(),
            )?;
            svg.into_bytes()
        }
        Some("png") => {
            let mut pixels = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
            draw(
                chart,
                BitMapBackend::with_buffer(&mut pixels, (WIDTH, HEIGHT)).into_drawing_area(),
            )?;
            let mut png = Vec::new();
            image::codecs::png::PngEncoder::new(&mut png)
                .write_image(&pixels, WIDTH, HEIGHT, image::ExtendedColorType::Rgb8)
                .map_err(|err| anyhow!("cannot encode {}: {err}", path.display()))?;
            png
        }
        _ => bail!(
            "cannot draw {}: a chart file must end in .svg or .png",
            path.display()
        ),
    };
    write_atomically(path, &bytes)
}

/// Registers the bundled DejaVu Sans as "sans-serif", once.
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let font: &'static [u8] = include_bytes!("../assets/DejaVuSans.ttf");
        plotters::style::register_font("sans-serif", FontStyle::Normal, font)
            .unwrap_or_else(|_| unreachable!("the bundled font is valid"));
    });
}

fn draw<DB: DrawingBackend>(chart: &BarChart, root: DrawingArea<DB, Shift>) -> Result<()> {
    let values = chart.groups.iter().flat_map(|g| g.values.iter().copied());
    let positive: Vec<f64> = values.filter(|v| *v > 0.0).collect();
    let (min, max) = positive
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    if positive.is_empty() {
        bail!("nothing to draw: no positive values");
    }
    if max / min > 20.0 {
        draw_on(chart, root, (min / 2.0..max * 3.0).log_scale(), min / 2.0)
    } else {
        draw_on(chart, root, 0.0..max * 1.15, 0.0)
    }
}

fn draw_on<DB, Y>(
    chart: &BarChart,
    root: DrawingArea<DB, Shift>,
    y_range: Y,
    floor: f64,
) -> Result<()>
where
    DB: DrawingBackend,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let plot_error =
        |err: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("cannot draw the chart: {err}");
    root.fill(&WHITE).map_err(plot_error)?;
    let groups = chart.groups.len();
    let mut plot = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 24))
        .margin(20)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..groups as f64, y_range)
        .map_err(plot_error)?;
    let labels: Vec<String> = chart.groups.iter().map(|g| g.label.clone()).collect();
    // Ticks fall on halves; a group's label goes under its middle.
    let group_label = |x: &f64| {
        let centred = (x - x.floor() - 0.5).abs() < 1e-6;
        let label = centred.then(|| labels.get(x.floor() as usize)).flatten();
        label.cloned().unwrap_or_default()
    };
    plot.configure_mesh()
        .disable_x_mesh()
        .x_labels(2 * groups + 1)
        .x_label_formatter(&group_label)
        .y_desc(chart.y_label.as_str())
        .y_label_formatter(&|y| format_number(*y))
        .label_style(("sans-serif", 16))
        .draw()
        .map_err(plot_error)?;

    let bars = chart.series.len().max(1);
    let width = 0.8 / bars as f64;
    for (s, name) in chart.series.iter().enumerate() {
        let color = COLORS[s % COLORS.len()];
        let rectangles = chart.groups.iter().enumerate().filter_map(|(g, group)| {
            let value = *group.values.get(s)?;
            let left = g as f64 + 0.1 + s as f64 * width;
            Some(Rectangle::new(
                [(left, floor), (left + width * 0.95, value)],
                color.filled(),
            ))
        });
        plot.draw_series(rectangles)
            .map_err(plot_error)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], color.filled()));
        let captions = chart.groups.iter().enumerate().filter_map(|(g, group)| {
            let value = *group.values.get(s)?;
            let left = g as f64 + 0.1 + s as f64 * width;
            Some(Text::new(
                format_number(value),
                (left, value),
                ("sans-serif", 14).into_font(),
            ))
        });
        plot.draw_series(captions).map_err(plot_error)?;
    }
    plot.configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 16))
        .draw()
        .map_err(plot_error)?;
    root.present().map_err(plot_error)?;
    Ok(())
}

/// 1234.5 → "1,235"; 45.67 → "45.7"; 7.512 → "7.51".
pub fn format_number(value: f64) -> String {
    if value >= 100.0 {
        let digits = format!("{value:.0}");
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}
