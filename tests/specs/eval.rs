//! `catdog eval`: counts that agree with what `predict` says, the mistakes and the
//! calibration, the photos training held out (and only those), and the built-in model's
//! accuracy on real photos.

use std::fs;

use serde_json::Value;

use crate::common::{
    catdog, copy_folder, eval, path, real_photos_or_skip, stderr, stdout, synth, train_one_epoch,
    train_one_epoch_generated,
};

#[test]
fn eval_counts_what_predict_says_and_lists_the_mistakes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let model = dir.path().join("model");
    synth(&data, 60, 32);
    train_one_epoch(&data, &model, 32).batch_size(8).succeeds();

    let output = eval(&model, &data).args(["--worst", "3"]).json().succeeds();
    let evaluation: Value = serde_json::from_str(stdout(&output).trim()).expect("one JSON object");

    // The same photos counted here from `catdog predict`'s answers.
    let output = catdog()
        .predict()
        .model(&model)
        .flex()
        .json()
        .arg(&data)
        .succeeds();
    let mut counted = [[0u64; 2]; 2];
    // Each answer's probability and whether it was right, to bin them as eval does.
    let mut answers = Vec::new();
    for line in stdout(&output).lines() {
        let prediction: Value = serde_json::from_str(line).unwrap();
        let truth = usize::from(prediction["path"].as_str().unwrap().contains("/dog/"));
        let predicted = usize::from(prediction["label"] == "dog");
        counted[truth][predicted] += 1;
        let probability = prediction["probability"].as_f64().unwrap();
        answers.push((probability, truth == predicted));
        // Below 0.8 the answer is "not sure"; the label stays the most probable class.
        let sure = probability >= 0.8;
        assert_eq!(prediction["sure"], sure, "{line}");
        let answer: Value = match sure {
            true => prediction["label"].clone(),
            false => "not sure".into(),
        };
        assert_eq!(prediction["answer"], answer, "{line}");
    }
    let matrix: Vec<Vec<u64>> =
        serde_json::from_value(evaluation["confusion_matrix"].clone()).unwrap();
    assert_eq!(matrix, counted.map(Vec::from).to_vec());
    assert_eq!(matrix.iter().flatten().sum::<u64>(), 60);
    assert_eq!(evaluation["photos"], 60);
    let correct = (counted[0][0] + counted[1][1]) as f64;
    assert_eq!(evaluation["accuracy"].as_f64().unwrap(), correct / 60.0);
    let recall_of_cats = evaluation["per_class"][0]["recall"].as_f64().unwrap();
    assert_eq!(recall_of_cats, counted[0][0] as f64 / 30.0);

    // Training fitted a temperature on its 6 validation photos; eval and predict apply it,
    // so the calibration error eval reports is the one predict's probabilities give.
    let info: Value =
        serde_json::from_str(&fs::read_to_string(model.join("catdog.json")).unwrap()).unwrap();
    assert_eq!(info["calibration"]["photos"], 6, "{info}");
    let temperature = info["calibration"]["temperature"].as_f64().unwrap();
    assert!(temperature > 0.0, "{info}");
    assert_eq!(evaluation["temperature"].as_f64().unwrap(), temperature);
    let mut bins = [(0.0f64, 0.0f64, 0u32); 10];
    for &(probability, right) in &answers {
        let bin = &mut bins[((probability * 10.0) as usize).min(9)];
        *bin = (
            bin.0 + probability,
            bin.1 + f64::from(u8::from(right)),
            bin.2 + 1,
        );
    }
    let error: f64 = bins
        .iter()
        .filter(|b| b.2 > 0)
        .map(|(confidence, right, _)| (confidence - right).abs() / 60.0)
        .sum();
    let reported = evaluation["reliability"]["error"].as_f64().unwrap();
    assert!((reported - error).abs() < 1e-4, "{reported} vs {error}");
    let unsure = answers.iter().filter(|a| a.0 < 0.8).count();
    assert_eq!(evaluation["not_sure"]["photos"], unsure);
    let sure_and_wrong = answers.iter().filter(|a| a.0 >= 0.95 && !a.1).count();
    assert_eq!(evaluation["wrong_and_sure"], sure_and_wrong);

    let wrong = evaluation["most_confidently_wrong"].as_array().unwrap();
    assert_eq!(wrong.len(), (60 - correct as usize).min(3));
    for pair in wrong.windows(2) {
        assert!(pair[0]["probability"].as_f64() >= pair[1]["probability"].as_f64());
    }
    for mistake in wrong {
        assert_ne!(mistake["label"], mistake["predicted"]);
        assert!(
            mistake["path"]
                .as_str()
                .unwrap()
                .contains(&format!("/{}/", mistake["label"].as_str().unwrap()))
        );
    }

    let sheet = dir.path().join("mistakes.png");
    let diagram = dir.path().join("calibration.svg");
    let output = eval(&model, &data)
        .arg("--mistakes")
        .arg(&sheet)
        .arg("--calibration")
        .arg(&diagram)
        .succeeds();
    let text = stdout(&output);
    assert!(
        text.contains("\ncalibration error ")
            && text.contains(&format!("temperature {temperature:.2} fitted in training"))
            && text.contains(&format!("\"not sure\" (below 0.80): {unsure} photos")),
        "{text}"
    );
    let svg = fs::read_to_string(&diagram).unwrap();
    assert!(svg.contains("60 photos: calibration error"), "{svg}");
    let model_line = format!("model: {} (trained on {}", path(&model), path(&data));
    assert!(text.starts_with(&model_line), "{text}");
    assert!(text.contains("\naccuracy "), "{text}");
    assert!(
        text.contains("photos/s (decoded photos to probabilities)"),
        "{text}"
    );
    assert!(text.contains("confusion matrix"), "{text}");
    let picture = image::open(&sheet).expect("the contact sheet is a PNG");
    assert!(picture.width() >= 160 && picture.height() >= 160);

    // The photos training held out: the same ones, so the same accuracy as training measured.
    let output = eval(&model, &data)
        .args(["--held-out", "--json"])
        .succeeds();
    let held_out: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    let info: Value =
        serde_json::from_str(&fs::read_to_string(model.join("catdog.json")).unwrap()).unwrap();
    assert_eq!(held_out["photos"], 6, "10 % of 60");
    assert_eq!(held_out["accuracy"], info["val_accuracy"]);
    assert_eq!(
        held_out["subset"],
        serde_json::json!({"held_out": {"val_split": 0.1, "seed": 42}})
    );

    let not_png = dir.path().join("mistakes.jpg");
    let output = eval(&model, &data)
        .arg("--mistakes")
        .arg(&not_png)
        .fails_with("must end in .png");
    assert!(stderr(&output).contains(path(&not_png)));
    assert!(!not_png.exists());
    let not_a_chart = dir.path().join("calibration.txt");
    eval(&model, &data)
        .arg("--calibration")
        .arg(&not_a_chart)
        .fails_with("must end in .svg or .png");
    assert!(!not_a_chart.exists());

    // Every answer is "not sure" at a threshold of 1 (but one whose probability is 1 in f32),
    // and none at 0.
    let predict_text = |threshold: &str| {
        let output = catdog()
            .predict()
            .model(&model)
            .flex()
            .args(["--not-sure-below", threshold])
            .arg(data.join("cat"))
            .succeeds();
        stdout(&output)
    };
    let text = predict_text("1");
    assert_eq!(text.lines().count(), 30);
    let unsure = |l: &str| l.contains("  not sure (") && l.ends_with(")");
    assert!(
        text.lines().all(|l| unsure(l) || l.ends_with("  1.00")),
        "{text}"
    );
    assert!(text.lines().any(unsure), "{text}");
    let text = predict_text("0");
    assert!(!text.contains("not sure"), "{text}");
    catdog()
        .predict()
        .args(["--not-sure-below", "1.5"])
        .arg(&data)
        .fails_with("1.5 is not a probability");
}

/// `--held-out` uses the split recorded with the model, and refuses what would score it on
/// photos it learned from: another folder, or another seed or share.
#[test]
fn eval_held_out_refuses_photos_the_model_may_have_learned_from() {
    let dir = tempfile::tempdir().unwrap();
    let (data, model) = (dir.path().join("data"), dir.path().join("model"));
    synth(&data, 40, 16);
    train_one_epoch(&data, &model, 16).seed(3).succeeds();

    let output = eval(&model, &data)
        .args(["--held-out", "--json"])
        .succeeds();
    let held_out: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(
        held_out["subset"],
        serde_json::json!({"held_out": {"val_split": 0.1, "seed": 3}}),
        "the seed recorded with the model, not eval's default"
    );
    eval(&model, &data)
        .args(["--held-out", "--seed", "42"])
        .fails_with("--seed 42 is not the 3 the model was trained with");

    let other = dir.path().join("other");
    synth(&other, 60, 16);
    let output = eval(&model, &other)
        .arg("--held-out")
        .fails_with("does not hold those photos");
    assert!(stderr(&output).contains(path(&data)), "{}", stderr(&output));
    eval(&model, &other).succeeds();

    // A copy of the folder, whose photos have other modification times, holds the same
    // photos: the same ones are held out.
    let copy = dir.path().join("copy");
    for class in ["cat", "dog"] {
        copy_folder(&data.join(class), &copy.join(class));
    }
    let touched = fs::read_dir(copy.join("cat"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let long_ago = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
    let file = fs::File::options()
        .write(true)
        .open(touched.path())
        .unwrap();
    file.set_modified(long_ago).unwrap();
    let output = eval(&model, &copy)
        .args(["--held-out", "--json"])
        .succeeds();
    let copied: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(copied["photos"], held_out["photos"]);
    assert_eq!(copied["accuracy"], held_out["accuracy"]);
    // Not one with a photo fewer.
    fs::remove_file(touched.path()).unwrap();
    eval(&model, &copy)
        .arg("--held-out")
        .fails_with("does not hold those photos");

    let generated = dir.path().join("generated");
    train_one_epoch_generated(&generated).succeeds();
    eval(&generated, &data)
        .arg("--held-out")
        .fails_with("trained on generated pictures");

    // A model saved before catdog recorded its split takes the flags, checked.
    let info_path = model.join("catdog.json");
    let mut info: Value = serde_json::from_str(&fs::read_to_string(&info_path).unwrap()).unwrap();
    info.as_object_mut().unwrap().remove("trained_on");
    fs::write(&info_path, info.to_string()).unwrap();
    eval(&model, &data)
        .args(["--held-out", "--val-split", "1.5"])
        .fails_with("--val-split must be at least 0 and below 0.9, not 1.5");
    eval(&model, &data)
        .args(["--held-out", "--seed", "3"])
        .succeeds();
}

/// The model compiled into catdog knows real photos: the 2,002 Kaggle originals it never
/// trained on (models/README.md: 99.4 % without the mirror image; the wide SmallCnn before it,
/// 95.4 %, fails this), and calls few of them neither a cat nor a dog (0.9 %).
#[test]
fn the_builtin_model_tells_real_cats_from_dogs() {
    let Some(photos) = real_photos_or_skip("the_builtin_model_tells_real_cats_from_dogs") else {
        return;
    };
    let output = catdog()
        .eval()
        .model("builtin")
        .flex()
        .data(&photos)
        .args(["--no-flip"])
        .json()
        .succeeds();
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["model"], "builtin");
    assert!(
        report["infer_images_per_sec"].as_f64().unwrap() > 0.0,
        "{report}"
    );
    assert!(report["photos"].as_u64().unwrap() > 2000, "{report}");
    let accuracy = report["accuracy"].as_f64().unwrap();
    assert!(
        accuracy > 0.985,
        "built-in model: {accuracy} on {}",
        photos.display()
    );
    let neither = report["neither"]["photos"].as_u64().unwrap();
    assert!(
        neither < 40,
        "{neither} of {} called neither",
        report["photos"]
    );
}
