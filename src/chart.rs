//! Pictures of the numbers, as SVG or PNG: bar charts of photos per second, and a training
//! run's curves.

use std::path::Path;
use std::sync::Once;

use anyhow::{Result, anyhow, bail};
use image::ImageEncoder;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use crate::saved_model::write_atomically;
use crate::train::EpochStats;

/// Something [`write`] can draw on any plotters backend.
pub trait Picture {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<()>;
}

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

/// Writes `chart` to `path`, as SVG or PNG by its extension.
pub fn write(chart: &impl Picture, path: &Path) -> Result<()> {
    let (width, height) = chart.size();
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    // Both backends measure text with the bundled font to lay the chart out.
    register_font();
    let bytes = match extension.as_deref() {
        Some("svg") => {
            let mut svg = String::new();
            chart.draw(SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area())?;
            svg.into_bytes()
        }
        Some("png") => {
            let mut pixels = vec![0u8; (width * height * 3) as usize];
            chart.draw(
                BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area(),
            )?;
            let mut png = Vec::new();
            image::codecs::png::PngEncoder::new(&mut png)
                .write_image(&pixels, width, height, image::ExtendedColorType::Rgb8)
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
pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let font: &'static [u8] = include_bytes!("../assets/DejaVuSans.ttf");
        plotters::style::register_font("sans-serif", FontStyle::Normal, font)
            .unwrap_or_else(|_| unreachable!("the bundled font is valid"));
    });
}

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

fn plot_error<DB: DrawingBackend>(err: DrawingAreaErrorKind<DB::ErrorType>) -> anyhow::Error {
    anyhow!("cannot draw the chart: {err}")
}

/// A training run's curves: loss and accuracy per epoch, training and validation, side by side.
pub struct Curves<'a> {
    pub history: &'a [EpochStats],
    /// The epoch whose network was saved, marked on both panels.
    pub kept_epoch: usize,
}

impl Picture for Curves<'_> {
    fn size(&self) -> (u32, u32) {
        (1100, 440)
    }

    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<()> {
        root.fill(&WHITE).map_err(plot_error::<DB>)?;
        let (left, right) = root.split_horizontally(550);
        let epochs: Vec<f64> = self.history.iter().map(|s| s.epoch as f64).collect();
        let train_loss: Vec<f64> = self.history.iter().map(|s| s.train_loss).collect();
        let val_loss: Vec<Option<f64>> = self.history.iter().map(|s| s.val_loss).collect();
        let percent = |a: f64| a * 100.0;
        let train_accuracy: Vec<f64> = self
            .history
            .iter()
            .map(|s| percent(s.train_accuracy))
            .collect();
        let val_accuracy: Vec<Option<f64>> = self
            .history
            .iter()
            .map(|s| s.val_accuracy.map(percent))
            .collect();
        self.draw_panel(
            left,
            ("Loss", "cross-entropy", SeriesLabelPosition::UpperRight),
            &epochs,
            &train_loss,
            &val_loss,
        )?;
        self.draw_panel(
            right,
            ("Accuracy", "% right", SeriesLabelPosition::LowerRight),
            &epochs,
            &train_accuracy,
            &val_accuracy,
        )?;
        root.present().map_err(plot_error::<DB>)?;
        Ok(())
    }
}

impl Curves<'_> {
    fn draw_panel<DB: DrawingBackend>(
        &self,
        area: DrawingArea<DB, Shift>,
        (title, y_label, legend): (&str, &str, SeriesLabelPosition),
        epochs: &[f64],
        train: &[f64],
        val: &[Option<f64>],
    ) -> Result<()> {
        let plot_error = plot_error::<DB>;
        let values = train.iter().chain(val.iter().flatten()).copied();
        let (low, high) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let margin = ((high - low) * 0.08).max(1e-3);
        let last = epochs.last().copied().unwrap_or(1.0).max(2.0);
        let mut plot = ChartBuilder::on(&area)
            .caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(1.0..last, (low - margin)..(high + margin))
            .map_err(plot_error)?;
        // Ticks only on whole epochs.
        let whole = |x: &f64| {
            if (x - x.round()).abs() < 1e-6 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        };
        plot.configure_mesh()
            .x_desc("epoch")
            .y_desc(y_label)
            .x_labels((last as usize).min(15))
            .x_label_formatter(&whole)
            .light_line_style(WHITE)
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(plot_error)?;
        let kept = self.kept_epoch as f64;
        let grey = RGBColor(150, 150, 150).stroke_width(3);
        plot.draw_series(std::iter::once(PathElement::new(
            [(kept, low - margin), (kept, high + margin)],
            grey,
        )))
        .map_err(plot_error)?
        .label(format!("kept: epoch {}", self.kept_epoch))
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], grey));
        let training: Vec<(f64, f64)> = epochs.iter().copied().zip(train.iter().copied()).collect();
        let validation: Vec<(f64, f64)> = epochs
            .iter()
            .zip(val)
            .filter_map(|(&x, y)| Some((x, (*y)?)))
            .collect();
        for (name, color, points) in [
            ("training", COLORS[0], training),
            ("validation", COLORS[1], validation),
        ] {
            if points.is_empty() {
                continue;
            }
            plot.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(plot_error)?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2))
                });
            plot.draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, color.filled())),
            )
            .map_err(plot_error)?;
        }
        plot.configure_series_labels()
            .position(legend)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(plot_error)?;
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn history() -> Vec<EpochStats> {
        (1..=4)
            .map(|epoch| EpochStats {
                epoch,
                train_loss: 1.0 / epoch as f64,
                train_accuracy: 0.5 + 0.1 * epoch as f64,
                val_loss: Some(0.9 / epoch as f64 + 0.1),
                val_accuracy: Some([0.6, 0.8, 0.7, 0.75][epoch - 1]),
                train_images_per_sec: 50.0,
                train_seconds: 1.0,
            })
            .collect()
    }

    #[test]
    fn curves_draw_as_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let history = history();
        let curves = Curves {
            history: &history,
            kept_epoch: 2,
        };
        let svg = dir.path().join("curves.svg");
        write(&curves, &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.starts_with("<svg") && text.trim_end().ends_with("</svg>"));
        for label in [
            "Loss",
            "Accuracy",
            "training",
            "validation",
            "kept: epoch 2",
        ] {
            assert!(text.contains(label), "{label} is missing from the SVG");
        }
        let png = dir.path().join("curves.png");
        write(&curves, &png).unwrap();
        let picture = image::open(&png).unwrap();
        assert_eq!((picture.width(), picture.height()), curves.size());
    }
}
