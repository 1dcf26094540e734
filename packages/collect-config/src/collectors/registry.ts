// The collectors by name. Each daemon run (and each re-exec) builds its own set, so state such as
// an ETag or a Last-Modified lives as long as the process configuration it came from.
import type { CollectorName } from '../option-table.ts';
import { cfnCollector } from './cfn.ts';
import { createEc2Collector } from './ec2.ts';
import { heatLocalCollector } from './heat-local.ts';
import { heatCollector } from './heat.ts';
import { createHearthCollector } from './hearth.ts';
import { localCollector } from './local.ts';
import { createRequestCollector } from './request.ts';
import type { Collector } from './types.ts';

const FACTORIES: Record<Exclude<CollectorName, 'zaqar'>, () => Collector> = {
  ec2: () => createEc2Collector(),
  cfn: () => cfnCollector,
  heat: () => heatCollector,
  heat_local: () => heatLocalCollector,
  local: () => localCollector,
  request: () => createRequestCollector(),
  hearth: () => createHearthCollector(),
};

/** A fresh collector for each name, in order; zaqar (refused or dropped beforehand by checkZaqar) is left out. */
export function buildCollectors(names: readonly CollectorName[]): Collector[] {
  return names.filter((name): name is Exclude<CollectorName, 'zaqar'> => name !== 'zaqar').map((name) => FACTORIES[name]());
}
