//! A training run's curves: loss and accuracy per epoch, as `curves.svg` beside a model.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{COLORS, Picture, plot_error};

/// One quantity per epoch: on the training photos, and on the validation photos where the
/// run validated.
pub struct Series {
    pub training: Vec<f64>,
    pub validation: Vec<Option<f64>>,
}

/// A training run's curves: loss and accuracy (in %) per epoch, side by side.
pub struct Curves {
    pub epochs: Vec<f64>,
    pub loss: Series,
    pub accuracy: Series,
    /// The epoch whose network was saved, marked on both panels.
    pub kept_epoch: usize,
}

impl Picture for Curves {
    fn size(&self) -> (u32, u32) {
        (1100, 440)
    }

    fn draw<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<()> {
        root.fill(&WHITE).map_err(plot_error::<DB>)?;
        let (left, right) = root.split_horizontally(550);
        self.draw_panel(
            left,
            ("Loss", "cross-entropy", SeriesLabelPosition::UpperRight),
            &self.loss,
        )?;
        self.draw_panel(
            right,
            ("Accuracy", "% right", SeriesLabelPosition::LowerRight),
            &self.accuracy,
        )?;
        root.present().map_err(plot_error::<DB>)?;
        Ok(())
    }
}

impl Curves {
    fn draw_panel<DB: DrawingBackend>(
        &self,
        area: DrawingArea<DB, Shift>,
        (title, y_label, legend): (&str, &str, SeriesLabelPosition),
        series: &Series,
    ) -> Result<()> {
        let plot_error = plot_error::<DB>;
        let (epochs, train, val) = (&self.epochs, &series.training, &series.validation);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn curves() -> Curves {
        let epochs = [1.0, 2.0, 3.0, 4.0];
        Curves {
            epochs: epochs.to_vec(),
            loss: Series {
                training: epochs.iter().map(|e| 1.0 / e).collect(),
                validation: epochs.iter().map(|e| Some(0.9 / e + 0.1)).collect(),
            },
            accuracy: Series {
                training: epochs.iter().map(|e| 50.0 + 10.0 * e).collect(),
                validation: [60.0, 80.0, 70.0, 75.0].map(Some).to_vec(),
            },
            kept_epoch: 2,
        }
    }

    #[test]
    fn curves_draw_as_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let curves = curves();
        let svg = dir.path().join("curves.svg");
        crate::chart::write(&curves, &svg).unwrap();
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
        crate::chart::write(&curves, &png).unwrap();
        let picture = image::open(&png).unwrap();
        assert_eq!((picture.width(), picture.height()), curves.size());
    }
}
