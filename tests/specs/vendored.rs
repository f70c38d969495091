//! The crates patched in vendor/ (each with its PATCHED.md) are the ones compiled in.

/// The patched crates in vendor/ are the ones compiled in: a version bump in Cargo.toml
/// would leave the patch unused (cargo only warns), and Cargo.lock would then name the
/// registry's crate instead.
#[test]
fn the_vendored_crates_are_the_ones_compiled_in() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(root.join("vendor"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["burn-flex", "burn-optim", "burn-store", "cubecl-wgpu"]
    );
    for name in &names {
        let manifest =
            std::fs::read_to_string(root.join("vendor").join(name).join("Cargo.toml")).unwrap();
        let version = manifest
            .lines()
            .find_map(|line| line.strip_prefix("version = "))
            .unwrap();
        let packages: Vec<&str> = lock
            .split("[[package]]")
            .filter(|package| package.contains(&format!("name = \"{name}\"\n")))
            .collect();
        assert_eq!(packages.len(), 1, "one {name} in Cargo.lock: {packages:?}");
        assert!(
            packages[0].contains(&format!("version = {version}")),
            "{name}: vendor/ has {version}, Cargo.lock {}",
            packages[0]
        );
        assert!(
            !packages[0].contains("source = "),
            "{name} comes from a registry, not vendor/: {}",
            packages[0]
        );
    }
}
