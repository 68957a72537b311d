// Parses the Prometheus text format /metrics answers (version 0.0.4): one sample per line,
// `name{label="value",...} number`, comments (# HELP, # TYPE) skipped. Returns a Map from the
// metric name to its samples [{labels, value}].

export function parseMetrics(text) {
  const metrics = new Map();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) {
      continue;
    }
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) {
      continue;
    }
    const value = Number(match[4]);
    if (Number.isNaN(value)) {
      continue;
    }
    const labels = {};
    const labelText = match[3] || '';
    const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    let label;
    while ((label = labelPattern.exec(labelText)) !== null) {
      labels[label[1]] = label[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    if (!metrics.has(match[1])) {
      metrics.set(match[1], []);
    }
    metrics.get(match[1]).push({ labels, value });
  }
  return metrics;
}

/** The sum of a metric's samples whose labels include `where` (null: metric absent). */
export function total(metrics, name, where = {}) {
  const samples = metrics.get(name);
  if (!samples) {
    return null;
  }
  let sum = 0;
  for (const sample of samples) {
    if (Object.entries(where).every(([key, value]) => sample.labels[key] === value)) {
      sum += sample.value;
    }
  }
  return sum;
}
