// SPDX-License-Identifier: MIT
// Opens a flame graph (.svg or .html) in headless Chromium through playwright-core, uses it
// the way a person would, and prints what it saw as "key=value" lines for the bats test
// to judge: the screenshot, the frames drawn, the hover details, zooming and searching.
//
// Usage: node flame_check.js FILE SCREENSHOT.png LEAF PARENT OTHER SEARCH
//   LEAF     a frame to hover and zoom into; PARENT its parent; OTHER a sibling of LEAF
//            (when a name is on several paths, the widest frame of that name is used)
//   SEARCH   the text typed into the search box (or the SVG's prompt)
// Environment: PLAYWRIGHT (playwright-core's directory), CHROMIUM (the browser binary).
// Widths are rendered widths in CSS pixels (0 for a hidden frame); "all" is the root.
"use strict";

const path = require("path");
const { chromium } = require(process.env.PLAYWRIGHT || "playwright-core");

const [file, shot, leaf, parent, other, term] = process.argv.slice(2);
if (!term) {
	console.error("usage: flame_check.js FILE SCREENSHOT.png LEAF PARENT OTHER SEARCH");
	process.exit(2);
}

function report(key, value) {
	console.log(`${key}=${String(value).replace(/\n/g, "\\n")}`);
}

// The rendered width of every named frame (summed when a name appears more than once).
function widths(page, names) {
	return page.evaluate((names) => {
		const out = {};
		for (const n of names)
			out[n] = 0;
		for (const g of document.querySelectorAll("#fg g.f")) {
			const name = g.querySelector("title").textContent.split("\n")[0];
			if (name in out)
				out[name] += g.querySelector("rect").getBoundingClientRect().width;
		}
		return out;
	}, names);
}

// The centre of the widest frame called NAME (a name can show up on several paths), in
// page coordinates.
async function centre(page, name) {
	const box = await page.evaluate((name) => {
		let best = null;
		for (const g of document.querySelectorAll("#fg g.f")) {
			if (g.querySelector("title").textContent.split("\n")[0] !== name)
				continue;
			const r = g.querySelector("rect").getBoundingClientRect();
			if (!best || r.width > best.width)
				best = r;
		}
		return best && { x: best.x + best.width / 2, y: best.y + best.height / 2 };
	}, name);
	if (!box)
		throw new Error(`no frame called ${name}`);
	return box;
}

async function clickFrame(page, name) {
	const c = await centre(page, name);
	await page.mouse.click(c.x, c.y);
}

async function reportWidths(page, prefix) {
	const w = await widths(page, ["all", leaf, parent, other]);
	for (const [k, v] of Object.entries(w))
		report(`${prefix}.${k}`, v.toFixed(1));
}

(async () => {
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
		args: ["--no-sandbox"],
	});
	try {
		const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
		const errors = [];
		const requests = [];

		page.on("pageerror", (e) => errors.push(e.message));
		page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
		page.on("request", (r) => r.url().startsWith("file:") || requests.push(r.url()));
		await page.goto("file://" + path.resolve(file));

		// what a person sees first
		const png = await page.screenshot({ path: shot, fullPage: !file.endsWith(".svg") });
		report("png_bytes", png.length);
		const check = await browser.newPage();
		await check.setContent(`<img id="i" src="data:image/png;base64,${png.toString("base64")}">`);
		const pixels = await check.evaluate(async () => {
			const img = document.getElementById("i");
			await img.decode();
			const c = document.createElement("canvas");
			c.width = img.naturalWidth;
			c.height = img.naturalHeight;
			const ctx = c.getContext("2d");
			ctx.drawImage(img, 0, 0);
			const d = ctx.getImageData(0, 0, c.width, c.height).data;
			const colours = new Set();
			let vivid = 0;
			for (let i = 0; i < d.length; i += 4) {
				colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
				// frames are strongly coloured; the background, text and borders are not
				if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60)
					vivid++;
			}
			return { colours: colours.size, vivid: vivid / (d.length / 4), w: c.width, h: c.height };
		});
		report("png_size", `${pixels.w}x${pixels.h}`);
		report("png_colours", pixels.colours);
		report("png_vivid", pixels.vivid.toFixed(3));

		const frames = await page.evaluate(() => {
			const out = [];
			for (const g of document.querySelectorAll("#fg g.f")) {
				const r = g.querySelector("rect").getBoundingClientRect();
				out.push({
					name: g.querySelector("title").textContent.split("\n")[0],
					w: r.width, h: r.height,
					label: g.querySelector("text").textContent,
					labelWidth: g.querySelector("text").getBoundingClientRect().width,
				});
			}
			return out;
		});
		report("frames", frames.length);
		for (const name of [leaf, parent, other]) {
			const f = frames.filter((x) => x.name === name).sort((a, b) => b.w - a.w)[0];
			if (!f)
				continue;
			report(`rendered.${name}`, `${f.w.toFixed(1)}x${f.h.toFixed(1)}`);
			report(`label.${name}`, f.label);
			report(`label_width.${name}`, f.labelWidth.toFixed(1));
		}
		await reportWidths(page, "width");

		// hovering shows the frame's numbers in the details line
		const c = await centre(page, leaf);
		await page.mouse.move(c.x, c.y);
		report("details", await page.textContent("#fg-details"));

		// clicking a frame zooms: it fills the width, its ancestors stay, the rest goes
		await clickFrame(page, leaf);
		await reportWidths(page, "zoom_leaf");
		report("reset_visible", await page.isVisible("#fg-reset"));
		await page.click("#fg-reset");
		await reportWidths(page, "reset");
		await clickFrame(page, parent);
		await reportWidths(page, "zoom_parent");
		await page.click("#fg-reset");

		// searching highlights the matches and shows their share of all samples
		const field = await page.evaluate(() => document.getElementById("fg-search").tagName.toLowerCase() === "input");
		if (field) {
			await page.fill("#fg-search", term);
		} else {
			page.once("dialog", (d) => d.accept(term));
			await page.click("#fg-search");
		}
		report("search_ui", field ? "field" : "prompt");
		report("matched", await page.textContent("#fg-matched"));
		const hl = await page.evaluate(() => Array.from(document.querySelectorAll("#fg g.f.m"), (g) => ({
			name: g.querySelector("title").textContent.split("\n")[0],
			fill: getComputedStyle(g.querySelector("rect")).fill,
		})));
		report("highlighted", [...new Set(hl.map((h) => h.name))].sort().join(","));
		report("highlight_fill", [...new Set(hl.map((h) => h.fill))].join(","));
		await page.screenshot({ path: shot.replace(/\.png$/, "") + "-search.png", fullPage: !file.endsWith(".svg") });

		report("errors", errors.length ? errors.join(" / ") : "none");
		report("requests", requests.length ? requests.join(" ") : "none");
	} finally {
		await browser.close();
	}
})().catch((e) => {
	console.error(`flame_check: ${e.message}`);
	process.exit(1);
});
