// JSON as the originals print and send it (json.dumps with its defaults: `, ` and `: `, ensure_ascii, floats in
// Python's repr): agent-kit's one implementation, under the names cfn-signal and cfn-get-metadata import.
export { pyJsonDumps as pythonJsonDumps, pyJsonString as pythonJsonString } from '@hearth/agent-kit/python-json';
