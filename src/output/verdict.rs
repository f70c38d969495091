//! The plain answer that opens `catdog bench`: this computer's CPU and GPU photos/s, their
//! ratio, the article's 10 and 1,000, one job's waiting time at each rate, and why the
//! figures differ from the article's.

use crate::bench::{
    ARTICLE_CPU, ARTICLE_GPU, BackendRun, BenchReport, EPOCHS, KAGGLE_PHOTOS,
    RESNET18_MULTIPLY_ADDS, RESNET50_MULTIPLY_ADDS, Sides, best_run, ndarray_left_out,
    training_time,
};
use crate::device::BackendKind;
use crate::model::NetworkKind;
use crate::numbers::{format_count, format_number};

/// "1,234 photos/s".
fn rate(run: &BackendRun) -> String {
    format!("{} photos/s", format_number(run.train_images_per_sec))
}

/// The answer, in a few plain lines: the first thing `catdog bench` prints.
pub fn bench_verdict(report: &BenchReport) -> String {
    let settings = &report.settings;
    let first = settings.batch_sizes[0];
    let sides = Sides::at_first_batch(report);
    let network = settings.network;
    let multiply_adds = network.multiply_adds(settings.image_size, 2) as f64;
    let mut out = format!(
        "The answer: {} training photos per second on this computer, beside the article's.\n\
         (The same work on every side: {} at {} px{}, batch {first}, about {} million \
         multiply-adds a photo.)\n",
        network.title(),
        network.title(),
        settings.image_size,
        match network {
            NetworkKind::ResNet18 => ", the article's kind of network",
            NetworkKind::SmallCnn | NetworkKind::SmallCnnWide | NetworkKind::EfficientNetLite0 =>
                "",
        },
        format_count((multiply_adds / 1e6).round() as u64)
    );
    let row =
        |label: &str, figure: String, what: String| format!("  {label:<12}{figure:<20}{what}\n");
    out.push_str(&match sides.cpu {
        Some(cpu) => row(
            "this CPU",
            rate(cpu),
            format!("{} on {}", cpu.backend, cpu.device),
        ),
        None => row(
            "this CPU",
            "not measured".into(),
            "add --backends cpu".into(),
        ),
    });
    out.push_str(&match (sides.gpu, sides.cpu, sides.software) {
        (Some(gpu), Some(cpu), _) => row(
            "this GPU",
            rate(gpu),
            format!(
                "{}: {:.0}× this CPU",
                gpu.device,
                gpu.train_images_per_sec / cpu.train_images_per_sec
            ),
        ),
        (Some(gpu), None, _) => row("this GPU", rate(gpu), gpu.device.clone()),
        (None, _, Some(software)) => row(
            "this GPU",
            "none found".into(),
            format!(
                "wgpu ran on a software rasterizer on the CPU instead: {}",
                rate(software)
            ),
        ),
        (None, _, None) => row(
            "this GPU",
            "none found".into(),
            "`catdog devices` says why".into(),
        ),
    });
    out.push_str(&row(
        "the article",
        format!("CPU ≈ {}", format_count(ARTICLE_CPU as u64)),
        format!(
            "GPU ≈ {} photos/s: the GPU {:.0}× faster",
            format_count(ARTICLE_GPU as u64),
            ARTICLE_GPU / ARTICLE_CPU
        ),
    ));
    if settings.batch_sizes.len() > 1 {
        out.push_str(&best_batches(report));
    }
    out.push_str(&one_job(&sides));
    out.push_str(&why(&sides, report, multiply_adds));
    out
}

/// After benches of several networks, their answers in one line: "In one line, training photos
/// per second: SmallCnn at 64 px, batch 32: CPU 511, GPU none found; ResNet-18 at 224 px, batch
/// 32: CPU 16.5, GPU none found; the article: CPU 10, GPU 1,000."
pub fn networks_line(reports: &[BenchReport]) -> String {
    let parts: Vec<String> = reports
        .iter()
        .map(|report| {
            let first = report.settings.batch_sizes[0];
            let sides = Sides::at_first_batch(report);
            let figure = |run: Option<&BackendRun>| {
                run.map_or("none found".to_string(), |r| {
                    format_number(r.train_images_per_sec)
                })
            };
            format!(
                "{} at {} px, batch {first}: CPU {}, GPU {}",
                report.settings.network.title(),
                report.settings.image_size,
                figure(sides.cpu),
                figure(sides.gpu)
            )
        })
        .collect();
    format!(
        "In one line, training photos per second: {}; the article: CPU {}, GPU {}.",
        parts.join("; "),
        format_count(ARTICLE_CPU as u64),
        format_count(ARTICLE_GPU as u64)
    )
}

/// With several batch sizes: each side at its own best batch size, saying so.
fn best_batches(report: &BenchReport) -> String {
    let sides = Sides::at_best_batch(report);
    let side = |name: &str, run: Option<&BackendRun>| {
        run.map(|r| format!("{name} {} (batch {})", rate(r), r.batch_size))
    };
    let mut parts: Vec<String> = [side("CPU", sides.cpu), side("GPU", sides.gpu)]
        .into_iter()
        .flatten()
        .collect();
    if let Some(ratio) = sides.gpu_over_cpu() {
        parts.push(format!("{ratio:.0}×"));
    }
    format!("  Each at its best batch size: {}.\n", parts.join(", "))
}

/// One stated job's waiting time on each side measured and at the article's two rates.
fn one_job(sides: &Sides) -> String {
    let time = |rate: f64| training_time(KAGGLE_PHOTOS, EPOCHS, rate);
    let mut here: Vec<String> = Vec::new();
    if let Some(cpu) = sides.cpu {
        here.push(format!("{} on this CPU", time(cpu.train_images_per_sec)));
    }
    if let Some(gpu) = sides.gpu {
        here.push(format!("{} on this GPU", time(gpu.train_images_per_sec)));
    }
    format!(
        "One job, {EPOCHS} epochs over the {} photos of the Kaggle set, takes {}; at the \
         article's rates, {} on its CPU and {} on its GPU.\n",
        format_number(KAGGLE_PHOTOS as f64),
        match here.is_empty() {
            true => "nothing measured here".to_string(),
            false => here.join(" and "),
        },
        time(ARTICLE_CPU),
        time(ARTICLE_GPU)
    )
}

/// Why this machine's figures differ from the article's: the work per photo, the software,
/// and a GPU's batch size.
fn why(sides: &Sides, report: &BenchReport, multiply_adds: f64) -> String {
    let settings = &report.settings;
    let mut out = match (settings.network, settings.image_size) {
        (NetworkKind::ResNet18, 224) => "Why they differ: not the network, which is the \
            article's kind (ResNet-18 at 224 px; ResNet-50, the other usual one, needs 2.3× its \
            work)."
            .to_string(),
        (NetworkKind::ResNet18, size) if size < 224 => format!(
            "Why they differ: the article's figures are for bigger pictures. ResNet-18 at 224 \
             px needs about {:.0}× the work a photo of ResNet-18 at {size} px here.",
            RESNET18_MULTIPLY_ADDS / multiply_adds
        ),
        (NetworkKind::ResNet18, size) => format!(
            "Why they differ: the article's figures are for smaller pictures. ResNet-18 at \
             {size} px here needs about {:.1}× the work a photo of ResNet-18 at 224 px.",
            multiply_adds / RESNET18_MULTIPLY_ADDS
        ),
        (
            NetworkKind::SmallCnn | NetworkKind::SmallCnnWide | NetworkKind::EfficientNetLite0,
            size,
        ) => format!(
            "Why they differ: the article's figures are for a bigger network. ResNet-18 at \
             224 px needs about {:.0}× the work a photo of {} at {size} px here, ResNet-50 \
             {:.0}× (`catdog bench --network resnet18` measures the first).",
            RESNET18_MULTIPLY_ADDS / multiply_adds,
            settings.network.title(),
            RESNET50_MULTIPLY_ADDS / multiply_adds
        ),
    };
    let ndarray = best_run(report, BackendKind::Ndarray);
    match (sides.cpu, ndarray) {
        (Some(cpu), Some(ndarray)) if cpu.backend != BackendKind::Ndarray => {
            out.push_str(&format!(
                " Software counts as much as the chip: on this same CPU, {} trains at {} and \
                 ndarray, a simpler CPU backend, at {}.",
                cpu.backend,
                rate(cpu),
                rate(ndarray)
            ))
        }
        _ if ndarray_left_out(settings.network).is_some() => out.push_str(
            " Software counts as much as the chip: `--backends flex,ndarray` adds ndarray, a \
             simpler CPU backend, for the difference (minutes a step with this network).",
        ),
        _ => out.push_str(
            " Software counts as much as the chip: `catdog bench` also measures ndarray, a \
             simpler CPU backend, for the difference.",
        ),
    }
    if let (Some(cpu), Some(gpu)) = (sides.cpu, sides.gpu)
        && gpu.train_images_per_sec < ARTICLE_GPU / ARTICLE_CPU * cpu.train_images_per_sec
        && report.settings.batch_sizes.len() == 1
    {
        out.push_str(
            " Small batches leave most of a big GPU idle: `catdog bench \
             --batch-size 32,128,512` lets each side show its best.",
        );
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{BenchSettings, Machine, Measurement};
    use crate::device::{CpuInfo, Precision};

    fn run(
        backend: BackendKind,
        device: &str,
        hardware_gpu: bool,
        batch: usize,
        rate: f64,
    ) -> BackendRun {
        let measured = Measurement {
            median: rate,
            min: rate,
            max: rate,
            windows: vec![rate],
        };
        BackendRun {
            backend,
            device: device.to_string(),
            batch_size: batch,
            precision: Precision::F32,
            hardware_gpu,
            train_images_per_sec: rate,
            infer_images_per_sec: rate * 4.0,
            train: measured.clone(),
            infer: measured,
            decode: None,
            cached_batches: None,
            end_to_end_train: None,
            warmup_seconds: 1.0,
            infer_warmup_seconds: 0.5,
        }
    }

    fn report(batch_sizes: Vec<usize>, runs: Vec<BackendRun>) -> BenchReport {
        BenchReport {
            catdog_version: "test".into(),
            machine: Machine {
                cpu: CpuInfo {
                    model: "Test CPU".into(),
                    cores: Some(2),
                    threads: 2,
                    compute_threads: 2,
                    memory_bytes: 1 << 30,
                },
                gpus: Vec::new(),
                os: "test".into(),
            },
            settings: BenchSettings {
                batch_sizes,
                ..BenchSettings::default()
            },
            runs,
            skipped: Vec::new(),
        }
    }

    #[test]
    fn with_a_gpu_the_answer_gives_both_rates_their_ratio_and_four_waiting_times() {
        let text = bench_verdict(&report(
            vec![32],
            vec![
                run(
                    BackendKind::Wgpu,
                    "NVIDIA H200 (Vulkan, discrete GPU)",
                    true,
                    32,
                    9_000.0,
                ),
                run(BackendKind::Flex, "Test CPU (2 threads)", false, 32, 750.0),
                run(BackendKind::Ndarray, "Test CPU (2 threads)", false, 32, 6.0),
            ],
        ));
        assert!(text.starts_with("The answer: "), "{text}");
        assert!(
            text.contains("SmallCnn at 64 px, batch 32, about 51 million"),
            "{text}"
        );
        assert!(text.contains("this CPU    750 photos/s"), "{text}");
        assert!(text.contains("this GPU    9,000 photos/s"), "{text}");
        assert!(
            text.contains("NVIDIA H200 (Vulkan, discrete GPU): 12× this CPU"),
            "{text}"
        );
        assert!(
            text.contains("GPU ≈ 1,000 photos/s: the GPU 100× faster"),
            "{text}"
        );
        // 250,000 photos: 333 s at 750/s (said "6 min"), 28 s at 9,000/s; the article's 10 and
        // 1,000.
        assert!(
            text.contains("takes 6 min on this CPU and 28 s on this GPU; at the article's rates, 6 h 56 min on its CPU and 4 min on its GPU"),
            "{text}"
        );
        assert!(
            text.contains("ResNet-18 at 224 px needs about 36×"),
            "{text}"
        );
        assert!(
            text.contains("ndarray, a simpler CPU backend, at 6.00 photos/s"),
            "{text}"
        );
        // 12× where the article says 100×: the hint at bigger batches.
        assert!(text.contains("--batch-size 32,128,512"), "{text}");
    }

    /// At 224 px ResNet-18 is the article's own workload: the answer names it, and the work
    /// a photo is not the reason the figures differ.
    #[test]
    fn for_resnet18_at_224_px_the_answer_names_the_network_and_not_its_size() {
        let mut report = report(
            vec![32],
            vec![
                run(BackendKind::Flex, "Test CPU (2 threads)", false, 32, 11.0),
                run(BackendKind::Wgpu, "NVIDIA H200", true, 32, 2_500.0),
            ],
        );
        report.settings.network = NetworkKind::ResNet18;
        report.settings.image_size = 224;
        let text = bench_verdict(&report);
        assert!(
            text.starts_with("The answer: ResNet-18 training photos per second"),
            "{text}"
        );
        assert!(
            text.contains(
                "ResNet-18 at 224 px, the article's kind of network, batch 32, about 1,814 million"
            ),
            "{text}"
        );
        assert!(text.contains("this GPU    2,500 photos/s"), "{text}");
        assert!(text.contains("Why they differ: not the network"), "{text}");
        assert!(!text.contains("bigger"), "{text}");

        report.settings.image_size = 448;
        let text = bench_verdict(&report);
        assert!(
            text.contains(
                "for smaller pictures. ResNet-18 at 448 px here needs about 4.0× the work"
            ),
            "{text}"
        );
    }

    /// EfficientNet-Lite0 is measured without ndarray unless asked, as ResNet-18 is: the
    /// answer says how to add it rather than that it was measured.
    #[test]
    fn for_efficientnet_lite0_the_answer_says_how_to_add_ndarray() {
        let mut report = report(
            vec![32],
            vec![run(
                BackendKind::Flex,
                "Test CPU (2 threads)",
                false,
                32,
                11.5,
            )],
        );
        report.settings.network = NetworkKind::EfficientNetLite0;
        report.settings.image_size = 224;
        let text = bench_verdict(&report);
        assert!(
            text.contains("The answer: EfficientNet-Lite0 training photos per second"),
            "{text}"
        );
        assert!(
            text.contains("a bigger network. ResNet-18 at 224 px needs about 5×"),
            "{text}"
        );
        assert!(
            text.contains("`--backends flex,ndarray` adds ndarray"),
            "{text}"
        );
    }

    #[test]
    fn without_a_gpu_the_answer_says_so_and_names_the_software_rasterizer() {
        let text = bench_verdict(&report(
            vec![32, 64],
            vec![
                run(BackendKind::Wgpu, "llvmpipe", false, 32, 2.0),
                run(BackendKind::Flex, "Test CPU (2 threads)", false, 32, 700.0),
                run(BackendKind::Flex, "Test CPU (2 threads)", false, 64, 720.0),
            ],
        ));
        assert!(text.contains("this GPU    none found"), "{text}");
        assert!(
            text.contains("software rasterizer on the CPU instead: 2.00 photos/s"),
            "{text}"
        );
        assert!(
            text.contains("this CPU    700 photos/s"),
            "the first batch size: {text}"
        );
        assert!(
            text.contains("Each at its best batch size: CPU 720 photos/s (batch 64)."),
            "{text}"
        );
        assert!(
            text.contains("on this CPU; at the article's rates"),
            "{text}"
        );
        assert!(!text.contains("on this GPU"), "{text}");
    }
}
