//! A grouped bar chart: `catdog bench --chart`.

use anyhow::{Result, bail};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::{COLORS, Picture, plot_error};
use crate::numbers::format_number;

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

/// The y axis is logarithmic when the largest value is more than 20 times the smallest.
impl Picture for BarChart {
    fn size(&self) -> (u32, u32) {
        (WIDTH, HEIGHT)
    }

    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<()> {
        draw_bars(self, root)
    }
}

fn draw_bars<DB: DrawingBackend>(chart: &BarChart, root: DrawingArea<DB, Shift>) -> Result<()> {
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
    let plot_error = plot_error::<DB>;
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
