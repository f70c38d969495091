//! Every `catdog …` example a user can copy, from every `--help` and from the project's
//! Markdown files, is a command line catdog takes (a renamed or removed flag fails here,
//! naming the file and line), and those that need no data of the user's, no network and no
//! GPU run as written and succeed.

use std::path::{Path, PathBuf};

use crate::common::{catdog, root, stdout};

/// The Markdown files whose command blocks are examples: the README, the Dutch page, and
/// every document beside them.
fn markdown_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = [
        "README.md",
        "LEESMIJ.md",
        "CONTRIBUTING.md",
        "bench/README.md",
        "data/README.md",
        "models/README.md",
    ]
    .iter()
    .map(|f| root().join(f))
    .collect();
    for entry in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "md") {
            files.push(entry.path());
        }
    }
    files.retain(|f| f.is_file());
    files
}

/// The `catdog …` lines of `text`'s code blocks (a trailing `\` continues a line), each with
/// its line number.
fn markdown_examples(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_block = false;
    let mut pending: Option<(usize, String)> = None;
    for (number, line) in text.lines().enumerate() {
        // A console block's prompt is the shell's, not part of the command.
        let trimmed = line.trim();
        let trimmed = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
        if trimmed.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        let (start, mut joined) = match pending.take() {
            Some((start, so_far)) => (start, format!("{so_far} {trimmed}")),
            None if trimmed == "catdog" || trimmed.starts_with("catdog ") => {
                (number + 1, trimmed.to_string())
            }
            None => continue,
        };
        if joined.ends_with('\\') {
            joined.pop();
            pending = Some((start, joined));
        } else {
            found.push((start, joined));
        }
    }
    found
}

/// The words a shell would pass: the line up to a comment, a redirection, a pipe or a `&`
/// (a command started in the background, or `&&`).
fn words(line: &str) -> Vec<String> {
    line.split_whitespace()
        .take_while(|w| {
            !w.starts_with('#') && !w.starts_with('>') && *w != "|" && !w.starts_with('&')
        })
        .map(str::to_string)
        .collect()
}

/// Every example: where it is shown, and the line.
fn all_examples() -> Vec<(String, String)> {
    let mut examples = Vec::new();
    let root_help = stdout(&catdog().arg("--help").run());
    let mut helps = vec![("catdog --help".to_string(), root_help.clone())];
    // The commands, as the root help lists them: "  train     Train a model …".
    let commands: Vec<String> = root_help
        .split("Commands:")
        .nth(1)
        .expect("the help lists the commands")
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() >= 7, "{commands:?}");
    for name in commands {
        let help = stdout(&catdog().args([name.as_str(), "--help"]).run());
        helps.push((format!("catdog {name} --help"), help));
    }
    for (which, help) in helps {
        for line in help.lines().map(str::trim) {
            if line.starts_with("catdog ") {
                examples.push((which.clone(), line.to_string()));
            }
        }
    }
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(root()).unwrap().display().to_string();
        for (number, line) in markdown_examples(&text) {
            examples.push((format!("{name}:{number}"), line));
        }
    }
    examples
}

#[test]
fn every_example_in_the_help_and_the_docs_is_a_command_line_catdog_takes() {
    let examples = all_examples();
    let from_help = examples
        .iter()
        .filter(|(w, _)| w.contains("--help"))
        .count();
    let from_docs = examples.len() - from_help;
    assert!(from_help >= 20 && from_docs >= 10, "{examples:#?}");
    for (where_, line) in &examples {
        if let Err(err) = catdog::cli::parse_check(&words(line)) {
            panic!("{where_} shows `{line}`, which catdog refuses:\n{err}");
        }
    }
    // The check itself tells a wrong flag from a right one.
    assert!(catdog::cli::parse_check(&words("catdog train -e 1 -b cpu -o m # x")).is_ok());
    assert!(catdog::cli::parse_check(&words("catdog train --epoch 1")).is_err());
    assert!(catdog::cli::parse_check(&words("catdog serve -p 1 & sleep 1")).is_ok());
    let block = "```sh\ncatdog train --data d \\\n    --epochs 2\nls\n```\ncatdog x\n";
    assert_eq!(
        markdown_examples(block),
        [(2, "catdog train --data d  --epochs 2".to_string())]
    );
}

/// What an example needs that a fresh clone lacks: the user's own photos or folders, a
/// network, a GPU, or minutes of training.
fn needs_more_than_a_fresh_clone(args: &[String], cwd: &Path) -> Option<String> {
    let command = args.get(1).map(String::as_str).unwrap_or("");
    match command {
        "devices" | "--help" | "--version" | "help" => return None,
        "predict" | "synth" => {}
        "train" | "bench" => return Some("minutes of computing".into()),
        "download" => return Some("the network".into()),
        "serve" => return Some("a server that runs until stopped".into()),
        _ => return Some("the user's own photos".into()),
    }
    if command == "synth"
        && let Some(count) = args
            .iter()
            .position(|a| a == "--count")
            .map(|i| &args[i + 1])
        && count.parse::<u32>().is_ok_and(|n| n > 2000)
    {
        return Some(format!("{count} pictures"));
    }
    if args.iter().any(|a| a.contains("gpu") || a.contains("wgpu")) {
        return Some("a GPU".into());
    }
    if command == "predict" {
        // Every path it names (the photos, --model's folder) must be there.
        let mut it = args[2..].iter().peekable();
        while let Some(arg) = it.next() {
            let value = match arg.as_str() {
                "--model" | "-m" => it.next().filter(|m| *m != "builtin"),
                "--backend" | "-b" | "--precision" => {
                    it.next();
                    None
                }
                flag if flag.starts_with('-') => None,
                path => Some(arg).filter(|_| !path.is_empty()),
            };
            if let Some(path) = value
                && !cwd.join(path).exists()
            {
                return Some(format!("{path}, which a fresh clone does not have"));
            }
        }
    }
    None
}

/// Runs the command line `args` (`catdog …`) in `dir`; it must succeed.
fn run_in(dir: &Path, args: &[String]) -> std::process::Output {
    catdog().args(&args[1..]).current_dir(dir).succeeds()
}

#[test]
fn the_examples_that_need_nothing_more_than_a_fresh_clone_run_as_written() {
    // In a folder of its own holding the clone's sample photos, so that nothing is written
    // into the project and no model trained in it answers.
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("examples"), dir.path().join("examples")).unwrap();
    let mut ran = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (where_, line) in all_examples() {
        let args = words(&line);
        if !seen.insert(args.clone()) {
            continue;
        }
        if let Some(why) = needs_more_than_a_fresh_clone(&args, dir.path()) {
            eprintln!("not run here ({why}): {line}   [{where_}]");
            continue;
        }
        run_in(dir.path(), &args);
        ran.push(line);
    }
    eprintln!("ran {} examples: {ran:#?}", ran.len());
    assert!(
        ran.iter()
            .any(|l| l.starts_with("catdog predict --samples")),
        "the README's first step, predicting the sample photos, ran: {ran:#?}"
    );
    assert!(
        ran.iter().any(|l| l.starts_with("catdog devices")),
        "{ran:#?}"
    );
}

/// The README's tour, the lines of its first `sh` block.
fn tour() -> Vec<String> {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split("## A five-minute tour")
        .nth(1)
        .expect("the README has a tour");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the tour opens with its commands");
    block
        .lines()
        .map(|l| l.split(" #").next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The tour as a new user runs it after `cargo install`: in an empty folder, far from the
/// source tree. `bench` and `train` get flags that make them take seconds, not minutes.
#[test]
fn the_readme_tour_runs_in_an_empty_folder() {
    let dir = tempfile::tempdir().unwrap();
    let lines = tour();
    assert!(lines.len() >= 4, "{lines:#?}");
    let quick = [
        (
            "catdog bench",
            "--backends flex --image-size 32 --batch-size 2 --seconds 0.1 --repeats 1 \
             --warmup-steps 1",
        ),
        (
            "catdog train",
            "--backend flex --generated 40 --epochs 1 --image-size 16",
        ),
    ];
    let mut outputs = Vec::new();
    for line in &lines {
        let mut args = words(line);
        assert_eq!(args[0], "catdog", "the tour runs catdog: {line}");
        if let Some((_, extra)) = quick.iter().find(|(start, _)| line.starts_with(start)) {
            args.extend(extra.split_whitespace().map(str::to_string));
        }
        outputs.push((line.clone(), run_in(dir.path(), &args)));
    }
    let (_, predicted) = outputs
        .iter()
        .find(|(line, _)| line.starts_with("catdog predict"))
        .expect("the tour predicts");
    let answers = stdout(predicted);
    assert!(
        answers.contains("sample cat.jpg  cat") && answers.contains("sample dog.jpg  dog"),
        "{answers}"
    );
    assert!(
        lines.iter().any(|l| l.contains("--network resnet18")),
        "the tour measures the article's kind of network: {lines:#?}"
    );
}

/// Every cargo command the documents give builds what the tests passed with: `--locked`,
/// which `cargo install` otherwise ignores Cargo.lock without.
#[test]
fn every_cargo_command_in_the_docs_keeps_cargo_lock() {
    let mut checked = 0;
    for file in markdown_files() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("cargo ") {
                let command = &line[at..];
                let verb = command.split_whitespace().nth(1).unwrap_or("");
                if !["install", "build", "test", "run", "check", "clippy"].contains(&verb) {
                    continue;
                }
                // Up to the end of the inline code or the line.
                let command = command.split('`').next().unwrap();
                checked += 1;
                assert!(
                    command.contains("--locked"),
                    "{}:{} gives `{command}` without --locked",
                    file.display(),
                    number + 1
                );
            }
        }
    }
    assert!(checked >= 5, "{checked}");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(readme.contains("cargo install --locked --path ."));
}

/// Files that reach users (the built-in model's description, the documents, the page `serve`
/// shows) name no folder of the machine they were made on.
#[test]
fn shipped_files_hold_no_absolute_paths() {
    let mut files = markdown_files();
    let mut folders = vec![root().join("models"), root().join("src/serve/page")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| {
                ["json", "md", "html", "js", "css", "svg"].contains(&e.to_str().unwrap())
            }) {
                files.push(path);
            }
        }
    }
    let machine_folders = [
        "/work/",
        "/home/",
        "/root/",
        "/Users/",
        "../shared",
        "C:\\Users",
    ];
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for folder in machine_folders {
            assert!(!text.contains(folder), "{} names {folder}", file.display());
        }
        if file.file_name().is_some_and(|n| n == "catdog.json") {
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            let data = &json["trained_on"]["data"];
            assert!(
                data.as_str().is_none_or(|d| !Path::new(d).is_absolute()),
                "{} records {data}",
                file.display()
            );
        }
    }
    assert!(
        files.iter().any(|f| f.ends_with("catdog.json")),
        "{files:#?}"
    );
}
