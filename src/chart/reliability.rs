//! A reliability diagram: for each band of confidence, how often the model was right, against
//! the diagonal a model whose probabilities mean what they say would follow.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{COLORS, Picture, plot_error};

/// The photos whose top probability fell in `low..high`.
pub struct ConfidenceBand {
    pub low: f64,
    pub high: f64,
    pub photos: usize,
    /// Mean top probability and share right, both 0 to 1.
    pub confidence: f64,
    pub accuracy: f64,
}

/// Bars of accuracy per confidence band, the diagonal, and each band's photo count.
pub struct ReliabilityDiagram {
    pub title: String,
    pub bands: Vec<ConfidenceBand>,
    /// The lowest confidence the model can give (1 / classes): the x axis starts there.
    pub lowest: f64,
}

impl Picture for ReliabilityDiagram {
    fn size(&self) -> (u32, u32) {
        (640, 560)
    }

    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<()> {
        let plot_error = plot_error::<DB>;
        root.fill(&WHITE).map_err(plot_error)?;
        let start = (self.lowest * 10.0).floor() / 10.0;
        let mut plot = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 18))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(start..1.0, 0.0..105.0)
            .map_err(plot_error)?;
        plot.configure_mesh()
            .x_desc("the model's probability for its answer")
            .y_desc("% of those answers right")
            .x_labels(((1.0 - start) * 10.0).round() as usize + 1)
            .x_label_formatter(&|x| format!("{x:.1}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .light_line_style(WHITE)
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(plot_error)?;
        let bands: Vec<&ConfidenceBand> = self
            .bands
            .iter()
            .filter(|b| b.photos > 0 && b.high > start)
            .collect();
        plot.draw_series(bands.iter().map(|b| {
            let inset = (b.high - b.low) * 0.06;
            Rectangle::new(
                [(b.low + inset, 0.0), (b.high - inset, b.accuracy * 100.0)],
                COLORS[0].filled(),
            )
        }))
        .map_err(plot_error)?
        .label("answers right, per band of probability (above: its photos)")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], COLORS[0].filled()));
        plot.draw_series(
            bands
                .iter()
                .map(|b| Circle::new((b.confidence, b.confidence * 100.0), 4, COLORS[1].filled())),
        )
        .map_err(plot_error)?
        .label("the band's mean probability: what a calibrated model gets right")
        .legend(|(x, y)| Circle::new((x + 7, y), 4, COLORS[1].filled()));
        let grey = RGBColor(120, 120, 120).stroke_width(1);
        plot.draw_series(std::iter::once(PathElement::new(
            [(start, start * 100.0), (1.0, 100.0)],
            grey,
        )))
        .map_err(plot_error)?;
        plot.draw_series(bands.iter().map(|b| {
            Text::new(
                format!("{}", b.photos),
                ((b.low + b.high) / 2.0 - 0.012, b.accuracy * 100.0 + 4.0),
                ("sans-serif", 12),
            )
        }))
        .map_err(plot_error)?;
        plot.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(plot_error)?;
        root.present().map_err(plot_error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reliability_diagram_draws_its_bands_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let diagram = ReliabilityDiagram {
            title: "2,000 photos: calibration error 1.2 %".into(),
            bands: vec![
                ConfidenceBand {
                    low: 0.5,
                    high: 0.6,
                    photos: 37,
                    confidence: 0.55,
                    accuracy: 0.51,
                },
                ConfidenceBand {
                    low: 0.9,
                    high: 1.0,
                    photos: 1811,
                    confidence: 0.98,
                    accuracy: 0.97,
                },
            ],
            lowest: 0.5,
        };
        let svg = dir.path().join("calibration.svg");
        crate::chart::write(&diagram, &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        for label in ["calibration error 1.2 %", "37", "1811", "answers right"] {
            assert!(text.contains(label), "{label} is missing from the SVG");
        }
    }
}
