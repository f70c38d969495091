// catdog's page: predictions, the machine, the race and the model, from catdog's own API.
"use strict";

const token = document.querySelector('meta[name="catdog-token"]').content;
const $ = (id) => document.getElementById(id);
const MAX_PHOTOS = 32; // a request's most, as the server takes them

function element(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

async function getJson(path) {
  const response = await fetch(path);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

async function post(path, body, headers, method) {
  const response = await fetch(path, {
    method: method || "POST",
    body: method === "DELETE" ? undefined : body,
    headers: Object.assign({ "X-Catdog-Token": token }, headers || {}),
  });
  let json = {};
  try { json = await response.json(); } catch (_) { /* an empty or cut reply */ }
  return { status: response.status, json };
}

// Cat or dog?

function showAnswer(item, answer) {
  const status = item.querySelector(".status");
  if (answer.error) {
    status.textContent = answer.error;
    status.className = "status error";
    return;
  }
  status.textContent = answer.words;
  status.className = answer.sure ? "status sure" : "status unsure";
  const bars = element("div", "bars");
  for (const [label, p] of Object.entries(answer.probabilities)) {
    const row = element("div", "bar-row");
    row.append(element("span", "bar-label", label));
    const track = element("span", "bar-track");
    const fill = element("span", "bar-fill " + label);
    fill.style.width = (100 * p).toFixed(1) + "%";
    track.append(fill);
    row.append(track, element("span", "bar-value", p.toFixed(2)));
    bars.append(row);
  }
  item.append(bars);
}

async function predict(files) {
  const photos = Array.from(files).filter((f) => f.size > 0 || f.name);
  for (let start = 0; start < photos.length; start += MAX_PHOTOS) {
    const group = photos.slice(start, start + MAX_PHOTOS);
    // Newest first, each group in the order the photos were chosen.
    const top = $("answers").firstChild;
    const items = group.map((file) => {
      const item = element("li", "answer");
      const picture = element("img", "thumb");
      picture.alt = file.name;
      picture.src = URL.createObjectURL(file);
      item.append(picture, element("span", "name", file.name),
        element("span", "status", "asking the model…"));
      $("answers").insertBefore(item, top);
      return item;
    });
    const form = new FormData();
    for (const file of group) form.append("photo", file, file.name);
    try {
      const { status, json } = await post("/api/predict", form);
      if (json.model) $("model-line").textContent = json.model;
      if (Array.isArray(json.photos)) {
        json.photos.forEach((answer, i) => showAnswer(items[i], answer));
      } else {
        const reason = json.error || `the server answered ${status}`;
        items.forEach((item) => showAnswer(item, { error: reason }));
      }
    } catch (err) {
      items.forEach((item) => showAnswer(item, { error: "catdog is not answering: " + err }));
    }
  }
}

function setUpPhotos() {
  for (const id of ["photos", "camera"]) {
    $(id).addEventListener("change", (event) => {
      predict(event.target.files);
      event.target.value = "";
    });
  }
  const drop = $("drop");
  drop.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    predict(event.dataTransfer.files);
  });
}

// Your computer

async function loadDevices() {
  try {
    const devices = await getJson("/api/devices");
    $("devices-verdict").textContent = devices.verdict;
    $("devices-text").textContent = devices.text;
  } catch (err) {
    $("devices-verdict").textContent = "catdog could not look: " + err.message;
  }
}

// CPU against GPU

function showBench(status) {
  $("bench-start").disabled = status.running;
  $("bench-start").textContent = status.running ? "Racing…" : "Start the race";
  $("bench-stop").hidden = !status.running;
  const progress = $("bench-progress");
  progress.replaceChildren(...status.progress.map((line) => element("li", "", line)));
  $("bench-error").hidden = !status.error;
  $("bench-error").textContent = status.error ? "The race failed: " + status.error : "";
  const [latest, ...earlier] = status.results;
  $("bench-latest").hidden = !latest;
  if (latest) {
    $("bench-verdict").textContent = latest.verdict;
    $("bench-text").textContent = latest.text;
    $("bench-chart").src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(latest.chart_svg);
  }
  $("bench-history").hidden = earlier.length === 0;
  $("bench-history-list").replaceChildren(...earlier.map((result) => {
    const item = element("li", "", new Date(result.finished_ms).toLocaleString() + ": ");
    item.append(element("span", "", result.verdict.split("\n")[0]));
    return item;
  }));
}

async function pollBench() {
  try {
    const status = await getJson("/api/bench");
    showBench(status);
    if (status.running) setTimeout(pollBench, 500);
  } catch (err) {
    $("bench-error").hidden = false;
    $("bench-error").textContent = "catdog is not answering: " + err.message;
  }
}

async function startBench() {
  $("bench-start").disabled = true;
  try {
    // catdog bench's defaults; a test (or a curious user, in the console) may set smaller ones.
    const { status, json } = await post("/api/bench",
      JSON.stringify(window.catdogBenchSettings || {}), { "Content-Type": "application/json" });
    if (status !== 202 && status !== 409) {
      $("bench-error").hidden = false;
      $("bench-error").textContent = json.error || `the server answered ${status}`;
    }
  } catch (err) {
    $("bench-error").hidden = false;
    $("bench-error").textContent = "catdog is not answering: " + err.message;
    $("bench-start").disabled = false;
    return;
  }
  pollBench();
}

async function stopBench() {
  $("bench-stop").disabled = true;
  try {
    await post("/api/bench", "", {}, "DELETE");
  } catch (err) {
    $("bench-error").hidden = false;
    $("bench-error").textContent = "catdog is not answering: " + err.message;
  }
  $("bench-stop").disabled = false;
}

// Under the hood

async function loadModel() {
  try {
    const model = await getJson("/api/model");
    $("model-line").textContent = model.line;
    const facts = [
      ["Model", model.name === "builtin" ? "built into catdog" : model.name],
      ["Network", model.network],
      ["Learned from", model.trained_on || "not recorded"],
      ["Right on the photos it held out", model.val_accuracy == null ? "not measured"
        : (100 * model.val_accuracy).toFixed(1) + " %"],
      ["Epochs", String(model.epochs)],
      ["Trained with", `${model.trained_with}, ${Math.round(model.train_images_per_sec)} photos/s`],
      ["Photos are seen at", `${model.image_size} × ${model.image_size} pixels`],
      ["Classes", model.classes.join(", ")],
      ["\"Not sure\" below", model.not_sure_below.toFixed(2)],
      ["Answering on", model.predicting_on],
    ];
    $("model-facts").replaceChildren(...facts.flatMap(([term, value]) =>
      [element("dt", "", term), element("dd", "", value)]));
    if (model.curves) {
      const curves = $("curves");
      curves.addEventListener("load", () => { curves.hidden = false; });
      curves.src = "/api/model/curves.svg";
    }
  } catch (err) {
    $("model-line").textContent = "catdog could not read its model: " + err.message;
  }
}

setUpPhotos();
$("bench-start").addEventListener("click", startBench);
$("bench-stop").addEventListener("click", stopBench);
loadModel();
loadDevices();
pollBench();
