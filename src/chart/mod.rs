//! Pictures of the numbers, as SVG or PNG: bar charts of photos per second ([`BarChart`]),
//! a training run's curves ([`Curves`]), and a model's reliability diagram
//! ([`ReliabilityDiagram`]).

mod bars;
mod curves;
mod reliability;

use std::path::Path;
use std::sync::Once;

use anyhow::{Result, anyhow, bail};
use image::ImageEncoder;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::fs::write_atomically;

pub use bars::{BarChart, BarGroup};
pub use curves::{Curves, Series};
pub use reliability::{ConfidenceBand, ReliabilityDiagram};

/// Something [`write`] can draw on any plotters backend.
pub trait Picture {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<()>;
}

/// The colours of the first, second and third series.
const COLORS: [RGBColor; 3] = [
    RGBColor(52, 101, 164),
    RGBColor(245, 121, 0),
    RGBColor(78, 154, 6),
];

/// The two file formats a chart can be written in.
enum Format {
    Svg,
    Png,
}

/// The format `path`'s extension names, or an error saying which ones a chart can have.
fn format_of(path: &Path) -> Result<Format> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("svg") => Ok(Format::Svg),
        Some("png") => Ok(Format::Png),
        _ => bail!(
            "cannot draw {}: a chart file must end in .svg or .png",
            path.display()
        ),
    }
}

/// Refuses a chart path [`write`] would refuse for its extension, before any work is done.
pub fn check_chart_path(path: &Path) -> Result<()> {
    format_of(path).map(|_| ())
}

/// Writes `chart` to `path`, as SVG or PNG by its extension.
pub fn write(chart: &impl Picture, path: &Path) -> Result<()> {
    let (width, height) = chart.size();
    let format = format_of(path)?;
    // Both backends measure text with the bundled font to lay the chart out.
    register_font();
    let bytes = match format {
        Format::Svg => svg(chart)?.into_bytes(),
        Format::Png => {
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
    };
    write_atomically(path, &bytes)
}

/// `chart` as SVG text.
pub fn svg(chart: &impl Picture) -> Result<String> {
    register_font();
    let mut svg = String::new();
    chart.draw(SVGBackend::with_string(&mut svg, chart.size()).into_drawing_area())?;
    Ok(svg)
}

/// Registers the bundled DejaVu Sans as "sans-serif", once.
pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let font: &'static [u8] = include_bytes!("../../assets/DejaVuSans.ttf");
        plotters::style::register_font("sans-serif", FontStyle::Normal, font)
            .unwrap_or_else(|_| unreachable!("the bundled font is valid"));
    });
}

fn plot_error<DB: DrawingBackend>(err: DrawingAreaErrorKind<DB::ErrorType>) -> anyhow::Error {
    anyhow!("cannot draw the chart: {err}")
}
