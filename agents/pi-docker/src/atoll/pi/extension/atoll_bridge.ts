/**
 * atoll's tool bridge for Pi: read, write, edit and bash run in the rollout's
 * container, never on the host where Pi itself runs.
 *
 * Pi's own tool definitions are kept (names, descriptions, schemas, prompt
 * snippets, output truncation) and only their operations are replaced: each
 * operation is one request over a unix socket served by the atoll process
 * that started Pi, which carries it out in the container (a Harbor
 * environment's exec, or the rollout's own hardened container) and keeps its
 * own record of it. The bridge also asks Pi to abort (wall clock, output size)
 * and this extension aborts by itself past the turn limit.
 *
 * Pi is started with --no-builtin-tools, so if this extension fails to load the
 * model has no tools at all rather than tools that touch the host. When the
 * socket closes (the atoll process is gone) Pi exits at once.
 *
 * Environment: ATOLL_PI_BRIDGE (socket path), ATOLL_PI_ROLLOUT (the rollout
 * id the bridge expects), ATOLL_PI_WORKDIR (the container's working
 * directory), ATOLL_PI_MAX_TURNS (0: no limit).
 */

import { createConnection, type Socket } from "node:net";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import {
	type BashOperations,
	createBashToolDefinition,
	createEditToolDefinition,
	createReadToolDefinition,
	createWriteToolDefinition,
	type EditOperations,
	type ReadOperations,
	type WriteOperations,
} from "@mariozechner/pi-coding-agent";

const SOCKET = process.env.ATOLL_PI_BRIDGE ?? "";
const ROLLOUT = process.env.ATOLL_PI_ROLLOUT ?? "";
const WORKDIR = process.env.ATOLL_PI_WORKDIR || "/workspace";
const MAX_TURNS = Number.parseInt(process.env.ATOLL_PI_MAX_TURNS ?? "0", 10) || 0;
// Exit status when the bridge goes away under a running Pi (EX_UNAVAILABLE).
const BRIDGE_LOST = 69;

type Reply = { id: number; ok: boolean; error?: string; [key: string]: unknown };

class BridgeError extends Error {}

/**
 * One connection to the atoll process; requests are answered in any order, by id.
 * The socket keeps Pi's event loop alive only while a request waits for its
 * answer, so Pi exits by itself when its run is over.
 */
class Bridge {
	private buffer = "";
	private nextId = 1;
	private pending = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
	onAbort: (reason: string) => void = () => {};

	constructor(private socket: Socket) {
		socket.setEncoding("utf8");
		socket.unref();
		socket.on("data", (chunk: string) => this.receive(chunk));
		socket.on("close", () => {
			for (const { reject } of this.pending.values()) reject(new BridgeError("the atoll bridge closed"));
			this.pending.clear();
			process.exit(BRIDGE_LOST);
		});
		socket.on("error", () => {});
	}

	static connect(path: string): Promise<Bridge> {
		return new Promise((resolve, reject) => {
			const socket = createConnection(path);
			socket.once("connect", () => resolve(new Bridge(socket)));
			socket.once("error", reject);
		});
	}

	private receive(chunk: string): void {
		this.buffer += chunk;
		let newline = this.buffer.indexOf("\n");
		while (newline >= 0) {
			const line = this.buffer.slice(0, newline);
			this.buffer = this.buffer.slice(newline + 1);
			newline = this.buffer.indexOf("\n");
			if (!line.trim()) continue;
			const message = JSON.parse(line);
			if (message.type === "abort") {
				this.onAbort(String(message.reason ?? "aborted"));
				continue;
			}
			const waiter = this.pending.get(message.id);
			if (waiter) {
				this.pending.delete(message.id);
				if (this.pending.size === 0) this.socket.unref();
				waiter.resolve(message as Reply);
			}
		}
	}

	/** Send one request and wait for its reply; a reply with ok=false rejects with its error. */
	async request(op: string, fields: Record<string, unknown>): Promise<Reply> {
		const id = this.nextId++;
		const reply = await new Promise<Reply>((resolve, reject) => {
			if (this.pending.size === 0) this.socket.ref();
			this.pending.set(id, { resolve, reject });
			this.socket.write(`${JSON.stringify({ id, op, ...fields })}\n`);
		});
		if (!reply.ok) throw new BridgeError(reply.error ?? `${op} failed`);
		return reply;
	}

	/** A message that needs no reply. */
	notify(op: string, fields: Record<string, unknown>): void {
		this.socket.write(`${JSON.stringify({ id: 0, op, ...fields })}\n`);
	}
}

const IMAGE_MAGIC: Array<[string, number[]]> = [
	["image/png", [0x89, 0x50, 0x4e, 0x47]],
	["image/jpeg", [0xff, 0xd8, 0xff]],
	["image/gif", [0x47, 0x49, 0x46, 0x38]],
];

function imageType(data: Buffer): string | null {
	for (const [mime, magic] of IMAGE_MAGIC) {
		if (magic.every((byte, i) => data[i] === byte)) return mime;
	}
	if (data.subarray(0, 4).toString("latin1") === "RIFF" && data.subarray(8, 12).toString("latin1") === "WEBP") {
		return "image/webp";
	}
	return null;
}

/**
 * The operations of one tool call. A file's content is fetched once, by the
 * access check that every read and edit starts with, and reused by readFile.
 */
function callOperations(bridge: Bridge, call: string, signal?: AbortSignal) {
	const fetched = new Map<string, Buffer>();
	const fetch = async (path: string, writable: boolean): Promise<void> => {
		const reply = await bridge.request("read", { call, path, writable });
		fetched.set(path, Buffer.from(String(reply.data ?? ""), "base64"));
	};
	const content = async (path: string): Promise<Buffer> => {
		if (!fetched.has(path)) await fetch(path, false);
		return fetched.get(path) as Buffer;
	};
	const write = async (path: string, text: string): Promise<void> => {
		await bridge.request("write", { call, path, data: Buffer.from(text, "utf8").toString("base64") });
		fetched.delete(path);
	};
	const read: ReadOperations = {
		access: (path) => fetch(path, false),
		readFile: content,
		detectImageMimeType: async (path) => imageType(await content(path)),
	};
	const edit: EditOperations = {
		access: (path) => fetch(path, true),
		readFile: content,
		writeFile: write,
	};
	const writeOps: WriteOperations = {
		// The write request creates the parent directories itself.
		mkdir: async () => {},
		writeFile: write,
	};
	const bash: BashOperations = {
		exec: async (command, cwd, { onData, timeout }) => {
			const cancel = () => bridge.notify("cancel", { call });
			signal?.addEventListener("abort", cancel, { once: true });
			try {
				const reply = await bridge.request("bash", { call, command, cwd, timeout: timeout ?? null });
				const output = Buffer.from(String(reply.output ?? ""), "base64");
				if (output.length > 0) onData(output);
				if (reply.cancelled) throw new Error("aborted");
				if (reply.timed_out) throw new Error(`timeout:${reply.timeout}`);
				return { exitCode: typeof reply.exit_code === "number" ? reply.exit_code : null };
			} finally {
				signal?.removeEventListener("abort", cancel);
			}
		},
	};
	return { read, edit, write: writeOps, bash };
}

export default async function atollBridge(pi: ExtensionAPI): Promise<void> {
	if (!SOCKET) throw new Error("ATOLL_PI_BRIDGE is not set: this extension runs only under atoll");
	const bridge = await Bridge.connect(SOCKET);
	let context: ExtensionContext | undefined;
	let turns = 0;
	let abortReason: string | undefined;

	const abort = (reason: string) => {
		abortReason ??= reason;
		context?.abort();
	};
	bridge.onAbort = abort;

	// Pi's own definitions, operations replaced per call (each call's operations know its id).
	const tools = [
		{ create: createReadToolDefinition, ops: "read" },
		{ create: createWriteToolDefinition, ops: "write" },
		{ create: createEditToolDefinition, ops: "edit" },
		{ create: createBashToolDefinition, ops: "bash" },
	] as const;
	const definitions = tools.map(({ create }) => create(WORKDIR));
	await bridge.request("hello", {
		rollout: ROLLOUT,
		workdir: WORKDIR,
		tools: definitions.map((d) => ({ name: d.name, description: d.description, parameters: d.parameters })),
	});
	tools.forEach(({ create, ops }, index) => {
		pi.registerTool({
			...definitions[index],
			execute: (id: string, params: any, signal: AbortSignal | undefined, onUpdate: any, ctx: any) => {
				const operations = callOperations(bridge, id, signal)[ops] as any;
				return (create as any)(WORKDIR, { operations }).execute(id, params, signal, onUpdate, ctx);
			},
		} as any);
	});

	pi.on("before_agent_start", async (event, ctx) => {
		context = ctx;
		// Pi names its own (host) working directory; the tools work in the container's.
		const systemPrompt = event.systemPrompt.replace(
			`Current working directory: ${process.cwd()}`,
			`Current working directory: ${WORKDIR}`,
		);
		bridge.notify("system_prompt", { text: systemPrompt });
		return { systemPrompt };
	});

	pi.on("turn_start", async (_event, ctx) => {
		context = ctx;
		turns += 1;
		if (abortReason) {
			ctx.abort();
		} else if (MAX_TURNS > 0 && turns > MAX_TURNS) {
			bridge.notify("limit", { reason: "max_turns", turns: turns - 1 });
			abort("max_turns");
		}
	});
}
