// The console's drawings, as SVG built element by element (text always as text nodes, never as
// markup): line charts of a series, and the graph of an entity's dependencies.

const NS = 'http://www.w3.org/2000/svg';

export function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, String(value));
  }
  for (const child of children) {
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

/** A short number: 1234567 -> 1.23M. */
export function shortNumber(value) {
  const magnitude = Math.abs(value);
  if (magnitude >= 1e9) return `${(value / 1e9).toPrecision(3)}G`;
  if (magnitude >= 1e6) return `${(value / 1e6).toPrecision(3)}M`;
  if (magnitude >= 1e3) return `${(value / 1e3).toPrecision(3)}k`;
  if (magnitude === 0 || Number.isInteger(value)) return String(value);
  return value.toPrecision(3);
}

/**
 * A line chart of points [{x, y}] (x ascending), with the y range from 0 (or the lowest value, if
 * negative) to the highest, its top and bottom labelled, and a dot per point.
 */
export function lineChart(points, { width = 360, height = 140, xLabel = (x) => String(x) } = {}) {
  const left = 44;
  const right = 8;
  const top = 8;
  const bottom = 20;
  const chart = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img' });
  chart.append(svg('line', { class: 'axis', x1: left, y1: height - bottom, x2: width - right, y2: height - bottom }));
  chart.append(svg('line', { class: 'axis', x1: left, y1: top, x2: left, y2: height - bottom }));
  if (points.length === 0) {
    chart.append(svg('text', { x: left + 8, y: height / 2 }, 'no data yet'));
    return chart;
  }
  const xs = points.map((point) => point.x);
  const ys = points.map((point) => point.y);
  const xMin = Math.min(...xs);
  const xMax = Math.max(...xs);
  const yMin = Math.min(0, ...ys);
  // A flat series at zero still gets a readable scale (0 to 1), not one of rounding errors.
  const yMax = Math.max(...ys) > yMin ? Math.max(...ys) : yMin + 1;
  const xOf = (x) => left + (xMax === xMin ? (width - left - right) / 2
    : ((x - xMin) / (xMax - xMin)) * (width - left - right));
  const yOf = (y) => height - bottom - ((y - yMin) / (yMax - yMin)) * (height - top - bottom);
  chart.append(svg('text', { x: 4, y: top + 8 }, shortNumber(yMax)));
  chart.append(svg('text', { x: 4, y: height - bottom }, shortNumber(yMin)));
  chart.append(svg('text', { x: left, y: height - 4 }, xLabel(xMin)));
  chart.append(svg('text', { x: width - right, y: height - 4, 'text-anchor': 'end' }, xLabel(xMax)));
  const path = points.map((point, i) => `${i === 0 ? 'M' : 'L'}${xOf(point.x).toFixed(1)},${yOf(point.y).toFixed(1)}`).join(' ');
  chart.append(svg('path', { class: 'line', d: path }));
  for (const point of points) {
    const dot = svg('circle', { class: 'dot', cx: xOf(point.x).toFixed(1), cy: yOf(point.y).toFixed(1), r: 2.5 });
    dot.append(svg('title', {}, `${xLabel(point.x)}: ${point.y}`));
    chart.append(dot);
  }
  return chart;
}

/**
 * A graph of an entity's dependencies: the entity in the middle, the keys it follows from (their
 * leaders) on the left, the entities that follow its keys on the right, one arrow per dependency
 * labelled with its keys and function. `leads` and `follows` are the dependency route's lists.
 */
export function dependencyGraph(entity, leads, follows) {
  const boxWidth = 210;
  const boxHeight = 30;
  const gap = 16;
  const rows = Math.max(1, leads.length, follows.length);
  const width = 3 * boxWidth + 2 * 170;
  const height = rows * (boxHeight + gap) + 40;
  const graph = svg('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', class: 'graph' });
  const defs = svg('defs');
  const marker = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
  marker.append(svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#5d6677' }));
  defs.append(marker);
  graph.append(defs);
  const middleX = boxWidth + 170;
  const middleY = height / 2 - boxHeight / 2;
  const box = (x, y, label, self) => {
    const group = svg('g', { class: self ? 'node self' : 'node' });
    group.append(svg('rect', { x, y, width: boxWidth, height: boxHeight, rx: 5 }));
    const text = svg('text', { x: x + boxWidth / 2, y: y + boxHeight / 2 + 4, 'text-anchor': 'middle' }, clip(label, 32));
    text.append(svg('title', {}, label));
    group.append(text);
    graph.append(group);
  };
  const rowY = (i, count) => {
    const total = count * (boxHeight + gap) - gap;
    return height / 2 - total / 2 + i * (boxHeight + gap);
  };
  const edge = (x1, y1, x2, y2, label) => {
    graph.append(svg('path', { class: 'edge', d: `M${x1},${y1} C${(x1 + x2) / 2},${y1} ${(x1 + x2) / 2},${y2} ${x2},${y2}`, 'marker-end': 'url(#arrow)' }));
    graph.append(svg('text', { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 4, 'text-anchor': 'middle' }, clip(label, 30)));
  };
  box(middleX, middleY, entity, true);
  follows.forEach((dependency, i) => {
    const y = rowY(i, follows.length);
    box(0, y, `${dependency.leader.entity}.${dependency.leader.key}`, false);
    edge(boxWidth, y + boxHeight / 2, middleX, middleY + boxHeight / 2,
      `(${dependency.function || dependency.kind}) → .${dependency.follower.key}`);
  });
  leads.forEach((dependency, i) => {
    const y = rowY(i, leads.length);
    const x = middleX + boxWidth + 170;
    box(x, y, `${dependency.follower.entity}.${dependency.follower.key}`, false);
    edge(middleX + boxWidth, middleY + boxHeight / 2, x, y + boxHeight / 2,
      `.${dependency.leader.key} (${dependency.function || dependency.kind})`);
  });
  return graph;
}

function clip(text, length) {
  return text.length <= length ? text : `${text.slice(0, length - 1)}…`;
}
