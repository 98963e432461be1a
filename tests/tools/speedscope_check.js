// SPDX-License-Identifier: MIT
// Opens a profile in speedscope's own app, in headless Chromium, and checks what it shows.
//
// Usage: node speedscope_check.js [--switch] FILE SCREENSHOT TITLE NAME...
//
// Serves speedscope's release build and FILE over http on 127.0.0.1 (the app
// fetches #profileURL only over http), opens it in the Sandwich view, and
// checks that TITLE (the profile's name) is in the toolbar and that every NAME
// is listed in the Sandwich table of functions. With --switch, TITLE need not
// be the profile the app opens with: the check goes from profile to profile,
// as the app's 'n' key does, until TITLE is the one shown. Then it switches to the
// Left Heavy flame graph, drawn with WebGL on a canvas, and waits until a
// screenshot (saved to SCREENSHOT) shows it: enough coloured pixels under
// the toolbar, where a blank chart has only black, white and grey. An import
// the app rejects (its alert()s, its "Something went wrong" page, uncaught
// exceptions) fails the check; console errors are only shown, as speedscope
// logs failed console.assert()s from its drawing code on a busy machine. A
// chart left blank is given a second page (see checkTwice).
// Exits 0 when all is well, 1 otherwise, saying why on stderr.
//
// Environment: CONSUMERS, the directory whose node_modules holds speedscope
// and playwright-core; CHROMIUM, the browser (default /usr/bin/chromium).
'use strict';

const fs = require('fs');
const http = require('http');
const path = require('path');

const args = process.argv.slice(2);
const switching = args[0] === '--switch';
const [file, shot, title, ...names] = switching ? args.slice(1) : args;
if (!file || !shot || !title || !names.length) {
	console.error('usage: node speedscope_check.js [--switch] FILE SCREENSHOT TITLE NAME...');
	process.exit(2);
}
const modules = path.join(process.env.CONSUMERS || '', 'node_modules');
const { chromium } = require(path.join(modules, 'playwright-core'));
const app = path.join(modules, 'speedscope', 'dist', 'release');
const TIMEOUT = 30000;

function fail(msg) {
	console.error(`speedscope_check: ${msg}`);
	process.exitCode = 1;
}

// The app's files, and FILE as /profile.json; nothing outside the app's directory.
const server = http.createServer((req, res) => {
	const url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
	const f = url === '/profile.json' ? file : path.join(app, path.normalize(url));

	if (url !== '/profile.json' && !f.startsWith(app + path.sep)) {
		res.writeHead(403).end();
		return;
	}
	fs.readFile(f, (err, data) => {
		if (err) {
			res.writeHead(404).end();
			return;
		}
		const type = f.endsWith('.html') ? 'text/html' : f.endsWith('.js') ? 'text/javascript' :
			f.endsWith('.css') ? 'text/css' : f.endsWith('.json') ? 'application/json' :
			'application/octet-stream';
		res.writeHead(200, { 'Content-Type': type }).end(data);
	});
});

// Coloured (not grey) pixels of a PNG below its first TOP rows, counted by the browser.
async function coloured(page, png, top) {
	return page.evaluate(async ([b64, y0]) => {
		const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
		const bmp = await createImageBitmap(blob);
		const canvas = new OffscreenCanvas(bmp.width, bmp.height);
		const ctx = canvas.getContext('2d');
		ctx.drawImage(bmp, 0, 0);
		const px = ctx.getImageData(0, y0, bmp.width, bmp.height - y0).data;
		let n = 0;
		for (let i = 0; i < px.length; i += 4)
			n += Math.max(px[i], px[i + 1], px[i + 2]) - Math.min(px[i], px[i + 1], px[i + 2]) > 24;
		return n;
	}, [png.toString('base64'), top]);
}

async function check(port) {
	const browser = await chromium.launch({
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		// root needs --no-sandbox; WebGL without a GPU needs SwiftShader
		args: ['--no-sandbox', '--use-gl=swiftshader', '--enable-unsafe-swiftshader'],
	});
	try {
		const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
		const errors = [];

		page.setDefaultTimeout(TIMEOUT);
		page.on('pageerror', (e) => errors.push(e.message));
		page.on('console', (m) => {
			if (m.text().startsWith('Failed to load'))
				errors.push(m.text());
			else if (m.type() === 'error' || m.type() === 'assert')
				console.error(`speedscope_check: note: the app logged: ${m.text()}`);
		});
		// speedscope alert()s when it does not know the format or finds no samples
		const alerted = new Promise((resolve, reject) => page.on('dialog', (d) => {
			d.dismiss().catch(() => {});
			reject(new Error(`the app said: ${d.message()}`));
		}));
		alerted.catch(() => {}); // it may come before anything waits for it
		await page.goto(`http://127.0.0.1:${port}/index.html#profileURL=/profile.json&view=sandwich`);

		const head = page.getByText(title, { exact: false }).first();
		// whichever comes first: the profile's name (any profile's, when switching), or the
		// app's complaint
		await Promise.race([
			(switching ? page.getByText('Left Heavy', { exact: false }).first() : head)
				.waitFor({ state: 'visible' }),
			alerted,
			page.getByText('Something went wrong').waitFor({ state: 'visible' }).then(() => {
				throw new Error(`the app could not import ${file}`);
			}, () => {}),
		]);
		const inToolbar = async () => {
			const b = await head.isVisible() ? await head.boundingBox() : null;
			return b && b.y <= 40;
		};
		// "K/N" of the toolbar's "(K/N)" after the profile's name; null with one profile
		const position = () => page.evaluate(() => {
			for (const el of document.querySelectorAll('body *')) {
				const m = !el.children.length && /^\((\d+)\/(\d+)\)$/.exec(el.textContent.trim());
				if (m)
					return `${m[1]}/${m[2]}`;
			}
			return null;
		});
		// one profile at a time: a key pressed before the app has shown the next profile
		// would go past the last one, which the app does not expect
		while (switching && !(await inToolbar())) {
			const at = await position();

			if (!at || at.split('/')[0] === at.split('/')[1])
				break;
			await page.keyboard.press('n');
			await page.waitForFunction((was) => {
				for (const el of document.querySelectorAll('body *')) {
					const m = !el.children.length && /^\((\d+)\/(\d+)\)$/.exec(el.textContent.trim());
					if (m)
						return `${m[1]}/${m[2]}` !== was;
				}
				return false;
			}, at);
		}
		const box = await head.boundingBox().catch(() => null);
		if (!box || box.y > 40)
			fail(`'${title}' is not in the toolbar (at ${JSON.stringify(box)})`);
		for (const name of names) {
			const row = page.getByText(name, { exact: false }).first();

			await row.waitFor({ state: 'visible' }).catch(() => fail(`'${name}' is not listed`));
		}

		// the flame graph is drawn on later animation frames: look until it is there
		await page.getByText('Left Heavy', { exact: false }).first().click();
		const toolbar = Math.ceil(box ? box.y + box.height : 24);
		const want = 1280 * 20; // one row of frames across the chart
		let n = 0;
		for (const end = Date.now() + TIMEOUT; n < want && Date.now() < end;) {
			n = await coloured(page, await page.screenshot({ path: shot }), toolbar);
			if (n < want)
				await page.waitForTimeout(200);
		}
		if (n < want) {
			const e = new Error(`no flame graph in the screenshot ${shot} (${n} coloured pixels)` +
					    (errors.length ? `; the app reported errors: ${errors.join('; ')}` : ''));
			e.drawing = true;
			throw e;
		}
		if (errors.length)
			fail(`the app reported errors: ${errors.join('; ')}`);
		console.log(`speedscope_check: '${title}' shown with ${names.join(', ')}; ` +
			    `${shot}: ${n} coloured pixels`);
	} finally {
		await browser.close();
	}
}

/*
 * The app once threw its own "Assertion failed." while drawing on a busy machine and left the
 * chart blank, having imported and listed everything: such a page is opened once more (and
 * said so). Anything else fails at once.
 */
async function checkTwice(port) {
	try {
		await check(port);
	} catch (e) {
		if (!e.drawing)
			throw e;
		console.error(`speedscope_check: note: ${e.message.split('\n')[0]}: opening the page once more`);
		await check(port);
	}
}

server.listen(0, '127.0.0.1', () => {
	checkTwice(server.address().port)
		.catch((e) => fail(e.message.split('\n')[0]))
		.finally(() => server.close());
});
