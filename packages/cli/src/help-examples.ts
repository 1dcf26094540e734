import type { Command } from 'commander';

/**
 * One example of a --help: what it does (empty: as the line before), and a `hearth ...` command line. `$NAME` words stand for
 * ids an earlier command printed; help-examples.test.ts parses every line (and runs some).
 */
export type Example = readonly [what: string, commandLine: string];

/** Adds an `Examples:` section to `command`'s --help, after its options. */
export function addExamples(command: Command, examples: readonly Example[]): Command {
  const lines = examples.map(([what, commandLine]) => `${what === '' ? '' : `  # ${what}\n`}  $ ${commandLine}`);
  return command.addHelpText('after', `\nExamples:\n${lines.join('\n')}`);
}

/** `hearth --help`: the first deployment, end to end. */
export const PROGRAM_EXAMPLES: readonly Example[] = [
  ['register a VM; put the os-collect-config.conf it prints in the VM', 'hearth server create web-1 --id vm-0001'],
  ['a script to run there', "hearth config create hello --group script --config 'echo hello > /tmp/hello'"],
  [
    'deploy it ($CONFIG_ID: the id config create printed) and wait for the agent',
    'hearth deployment create --config $CONFIG_ID --server vm-0001',
  ],
  ['', 'hearth deployment wait $DEPLOYMENT_ID'],
  ['watch what happens, as it happens (Ctrl-C stops)', 'hearth events --follow'],
];

/** `hearth stack --help`. */
export const STACK_EXAMPLES: readonly Example[] = [
  ['a stack to group servers, wait conditions and scaling groups', 'hearth stack create prod'],
  ['', 'hearth stack list'],
  ['refused while servers, deployments or scaling groups belong to it', 'hearth stack delete prod'],
];

/** `hearth server --help`. */
export const SERVER_EXAMPLES: readonly Example[] = [
  ['register a VM under the id its agent knows (e.g. the Nova uuid)', 'hearth server create web-1 --id vm-0001'],
  ['when each agent last fetched its metadata', 'hearth server list'],
  ['revoke its credential and fail its deployments in progress', 'hearth server delete vm-0001'],
];

/** `hearth server create --help`. */
export const SERVER_CREATE_EXAMPLES: readonly Example[] = [
  ['register a VM; write the os-collect-config.conf it prints to the VM', 'hearth server create web-1 --id vm-0001'],
  [
    'a member of stack prod whose agent polls the Heat-style metadata API',
    'hearth server create web-2 --stack prod --resource-name web_server --transport POLL_SERVER_HEAT',
  ],
  ['the whole reply as JSON, credential included (shown only this once)', 'hearth server create web-3 --json'],
];

/** `hearth config --help`. */
export const CONFIG_EXAMPLES: readonly Example[] = [
  ['a shell script from a file', 'hearth config create install-nginx --group script --config-file install.sh'],
  ['', 'hearth config list --limit 20'],
  ['with its body', 'hearth config show $CONFIG_ID'],
];

/** `hearth config create --help`. */
export const CONFIG_CREATE_EXAMPLES: readonly Example[] = [
  ['an inline script', "hearth config create hello --group script --config 'echo hello > /tmp/hello'"],
  [
    'a script from a file with an input (default 80) and an output the script writes',
    'hearth config create install-nginx --group script --config-file install.sh --input port=80 --input-type port=Number --output url',
  ],
  [
    'inputs, outputs and options from a Heat definition file (JSON or YAML)',
    'hearth config create site --group ansible --config-file site.yml --definition-file site-definition.yaml',
  ],
];

/** `hearth deployment --help`. */
export const DEPLOYMENT_EXAMPLES: readonly Example[] = [
  ['deploy a config to a server, then wait for its signal', 'hearth deployment create --config $CONFIG_ID --server vm-0001'],
  ['', 'hearth deployment wait $DEPLOYMENT_ID --timeout 600'],
  ['what the hook printed, and what happened when', 'hearth deployment output $DEPLOYMENT_ID deploy_stdout'],
  ['', 'hearth deployment timeline $DEPLOYMENT_ID'],
  ['run it again with a new input', 'hearth deployment update $DEPLOYMENT_ID --action UPDATE --input port=8081'],
];

/** `hearth deployment create --help`. */
export const DEPLOYMENT_CREATE_EXAMPLES: readonly Example[] = [
  ['deploy with an input value', 'hearth deployment create --config $CONFIG_ID --server vm-0001 --input port=8080'],
  [
    'a JSON input value (KEY:=JSON), 10 minutes for the agent to signal',
    `hearth deployment create --config $CONFIG_ID --server vm-0001 --input 'hosts:=["a","b"]' --timeout 600`,
  ],
  ['COMPLETE at once: no signal is awaited', 'hearth deployment create --config $CONFIG_ID --server vm-0001 --no-signal'],
];

/** `hearth deployment wait --help`. */
export const DEPLOYMENT_WAIT_EXAMPLES: readonly Example[] = [
  ['exit 0 on COMPLETE, 1 on FAILED, 2 if neither within 10 minutes', 'hearth deployment wait $DEPLOYMENT_ID --timeout 600'],
  ['in a script: the deployment as JSON once it ended', 'hearth deployment wait $DEPLOYMENT_ID --json'],
];

/** `hearth events --help`. */
export const EVENTS_EXAMPLES: readonly Example[] = [
  ['follow everything as it happens, one JSON object per line (Ctrl-C stops)', 'hearth events --follow --json'],
  ['follow the failures only', 'hearth events --follow --type deployment.failed'],
  ["one deployment's events so far", 'hearth events --resource $DEPLOYMENT_ID'],
];

/** `hearth waitcondition --help`. */
export const WAITCONDITION_EXAMPLES: readonly Example[] = [
  [
    'wait for 3 VMs to signal within 10 minutes; prints the URLs they signal',
    'hearth waitcondition create web-ready --stack prod --count 3 --timeout 600',
  ],
  ['block until they did (exit 0) or it failed (exit 1)', 'hearth waitcondition wait web-ready --stack prod'],
  ['', 'hearth waitcondition list --stack prod'],
];

/** `hearth alarm --help`. */
export const ALARM_EXAMPLES: readonly Example[] = [
  [
    'ALARM when the average CPU is over 80 for 3 minutes; POST a scaling policy URL then',
    'hearth alarm create cpu-high --metric CPUUtilization --statistic Average --period 60 --evaluation-periods 3 --threshold 80 --comparison GreaterThanThreshold --alarm-action $ALARM_URL',
  ],
  ['', 'hearth alarm list'],
  ['', 'hearth alarm history cpu-high'],
];

/** `hearth metrics --help`. */
export const METRICS_EXAMPLES: readonly Example[] = [
  [
    "send a sample as a server ($SERVER_TOKEN: its credential's token)",
    'hearth metrics put QueueDepth 12 --unit Count --token $SERVER_TOKEN',
  ],
  ['', 'hearth metrics list --metric QueueDepth --limit 10'],
];

/** `hearth scaling-group --help`. */
export const SCALING_GROUP_EXAMPLES: readonly Example[] = [
  [
    '1 to 5 workers; hearth POSTs each change of desired capacity to the actuator',
    'hearth scaling-group create workers --stack prod --min-size 1 --max-size 5 --actuator-url https://provisioner.example/hook',
  ],
  ['tell hearth about the VMs the provisioner made', 'hearth scaling-group members workers --stack prod --add vm-0002'],
  ['', 'hearth scaling-group show workers --stack prod'],
];

/** `hearth scaling-policy --help`. */
export const SCALING_POLICY_EXAMPLES: readonly Example[] = [
  [
    'add a worker per signal; prints the alarm_url to give an alarm',
    'hearth scaling-policy create scale-up --stack prod --group workers --adjustment-type change_in_capacity --adjustment 1',
  ],
  ['try it by hand', 'hearth scaling-policy signal scale-up --stack prod'],
];
